#!/usr/bin/env bash
# End to end: kill -9 of a server that writes a snapshot after every batch (--snapshot-every 1 --snapshot-min-records 0), so that a kill
# lands in the middle of writing one more often than not, under a stream of submissions; on SQLite and, where it
# can be installed, PostgreSQL. After each kill the server starts from its latest snapshot (its log says so) and
# every acknowledged submission is present.
# Usage: snapshot_kill_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=snapshot_kill
source "$(dirname "$0")/lib_e2e.sh"

DATABASES=("sqlite:$WORK/server/allot.db")
if start_postgres optional; then DATABASES+=("$PG_URL"); else say "SQLite only"; fi

for db in "${DATABASES[@]}"; do
  rm -rf "$WORK/server" "$WORK/stop-stream"
  start_server --database "$db" --snapshot-every 1 --snapshot-min-records 0
  cat >"$WORK/teams.yaml" <<'YAML'
teams:
  - name: team-a
    allocation:
      - {instance_type: ml.g5.8xlarge, instances: 1}
YAML
  "$ALLOT" apply "$WORK/teams.yaml" >/dev/null || fail "allot apply failed"
  # 500 static nodes, so that each snapshot is large enough to take a while to write.
  code=$(curl -s -o "$WORK/nodes-answer" -w '%{http_code}' -H "Authorization: Bearer $ALLOT_TOKEN" -H 'Content-Type: application/json' \
    -X POST "$ALLOT_SERVER/v1/nodes" -d '[{"name": "n[1-500]", "instance_type": "ml.g5.8xlarge", "labels": {"network-node-layer-3": "x"}}]')
  [ "$code" = 201 ] || fail "cannot add the nodes: $code $(cat "$WORK/nodes-answer")"
  : >"$WORK/acked"
  i=0
  for round in 1 2 3; do
    rm -f "$WORK/stop-stream"
    # Four clients at once, so that batches hold several submissions and snapshots grow with the state.
    for c in 1 2 3 4; do
      (
        n=0
        while [ ! -e "$WORK/stop-stream" ]; do
          n=$((n + 1))
          name="r$round-c$c-$n"
          code=$(curl -s --max-time 20 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ALLOT_TOKEN" \
            -H 'Content-Type: application/json' -X POST "$ALLOT_SERVER/v1/jobs" \
            -d "{\"name\": \"$name\", \"team\": \"team-a\", \"per_replica\": {\"accelerators\": 1}, \"command\": \"true\"}" || true)
          [ "$code" = 201 ] && echo "$name" >>"$WORK/acked"
        done
      ) &
      PIDS+=("$!")
    done
    sleep $((1 + RANDOM % 3)).$((RANDOM % 10))
    kill -9 "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null || true
    touch "$WORK/stop-stream"
    wait "${PIDS[@]: -4}" 2>/dev/null || true
    written=$(grep -c "snapshot at journal record" "$WORK/server.err.log" || true)
    if [ "${db%%:*}" != sqlite ]; then
      # PostgreSQL frees the killed leader's advisory lock once its backend has noticed; until then a new server
      # would start as a standby.
      for _ in $(seq 1 100); do
        [ "$("$(cat "$PG_DIR/bin")/psql" "$db" -Atc "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'" 2>/dev/null)" = 0 ] && break
        sleep 0.1
      done
    fi
    start_server --database "$db" --snapshot-every 1 --snapshot-min-records 0
    grep_q "after the snapshot at record" "$WORK/server.err.log" ||
      fail "round $round: the restarted server did not start from a snapshot: $(grep replayed "$WORK/server.err.log")"
    "$ALLOT" jobs -o json >"$WORK/jobs.json" || fail "allot jobs failed after the restart"
    grep -o '"name": *"r[0-9]*-c[0-9]*-[0-9]*"' "$WORK/jobs.json" | grep -o 'r[0-9]*-c[0-9]*-[0-9]*' | sort -u >"$WORK/present"
    acked=$(sort -u "$WORK/acked" | wc -l)
    present=$(comm -12 <(sort -u "$WORK/acked") "$WORK/present" | wc -l)
    missing=$(comm -23 <(sort -u "$WORK/acked") "$WORK/present" | head -5 | tr '\n' ' ')
    say "${db%%:*} round $round: $written snapshots written before the kill; $(grep -o 'replayed.*' "$WORK/server.err.log" | head -1); $acked acknowledged, $present present"
    [ "$acked" -gt 0 ] || fail "round $round: nothing was acknowledged"
    [ "$present" = "$acked" ] || fail "round $round: acknowledged submissions are missing after kill -9: $missing"
  done
  kill "$SERVER_PID"
  wait "$SERVER_PID" 2>/dev/null || true
done
say PASS
