#!/usr/bin/env bash
# End to end: the leader's PostgreSQL goes away under a stream of submissions (pg_ctl stop -m immediate) and comes
# back (docs/deployment.md, "When the database goes away"). While it is away the server acknowledges nothing: it
# steps down within about a second, answers submissions 503 with the reason, and keeps running. Once the database
# is back, the server leads again, the stream is acknowledged again, and every submission that was acknowledged
# before, during or after the outage is present.
# Usage: pg_outage_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=pg_outage
source "$(dirname "$0")/lib_e2e.sh"

start_postgres

start_server --database "$PG_URL"
role() {
  curl -s --max-time 2 "$ALLOT_SERVER/v1/health" | grep -o '"role": *"[a-z]*"' | grep -o '[a-z]*"$' | tr -d '"' || true
}
[ "$(role)" = leader ] || fail "the server should lead"

cat >"$WORK/teams.yaml" <<'YAML'
teams:
  - name: team-a
    allocation:
      - {instance_type: ml.g5.8xlarge, instances: 1}
YAML
"$ALLOT" apply "$WORK/teams.yaml" >/dev/null || fail "allot apply failed"

# The stream: each name goes to acked on a 201, to refused with the HTTP status otherwise (nothing runs: no nodes).
: >"$WORK/acked"; : >"$WORK/refused"
(
  i=0
  while [ ! -e "$WORK/stop-stream" ]; do
    i=$((i + 1))
    code=$(curl -s --max-time 40 -o "$WORK/last-answer" -w '%{http_code}' -H "Authorization: Bearer $ALLOT_TOKEN" \
      -H 'Content-Type: application/json' -X POST "$ALLOT_SERVER/v1/jobs" \
      -d "{\"name\": \"s-$i\", \"team\": \"team-a\", \"per_replica\": {\"accelerators\": 1}, \"command\": \"true\"}" || true)
    if [ "$code" = 201 ]; then echo "s-$i" >>"$WORK/acked"; else echo "s-$i $code $(head -c 300 "$WORK/last-answer")" >>"$WORK/refused"; sleep 0.05; fi
  done
) &
STREAM_PID=$!
PIDS+=("$STREAM_PID")
for _ in $(seq 1 200); do [ "$(wc -l <"$WORK/acked")" -ge 20 ] && break; sleep 0.05; done
[ "$(wc -l <"$WORK/acked")" -ge 20 ] || fail "the submission stream did not get going: $(tail -3 "$WORK/refused")"

say "stopping PostgreSQL (immediate) after $(wc -l <"$WORK/acked") acknowledged submissions"
t0=$(date +%s%N)
bash "$PG_HELPER" halt "$PG_DIR" || fail "cannot halt PostgreSQL"
halted=$(( ($(date +%s%N) - t0) / 1000000 ))
stepped=""
for _ in $(seq 1 100); do
  if [ "$(role)" = standby ]; then stepped=$(( ($(date +%s%N) - t0) / 1000000 )); break; fi
  sleep 0.05
done
[ -n "$stepped" ] || fail "the server did not step down within 5 s of losing its database: role $(role)"
gone "$SERVER_PID" && fail "the server exited when its database went away"
# From now on nothing may be acknowledged until the database is back.
acked_down=$(wc -l <"$WORK/acked")
refused_down=$(wc -l <"$WORK/refused")
sleep 2
[ "$(wc -l <"$WORK/acked")" = "$acked_down" ] || fail "submissions were acknowledged while the database was down"
[ "$(wc -l <"$WORK/refused")" -gt "$refused_down" ] || fail "the stream got no answers while the database was down"
tail -n 1 "$WORK/refused" | grep_q ' 503 ' || fail "a submission during the outage should get 503: $(tail -n 1 "$WORK/refused")"
say "stepped down ${stepped} ms after pg_ctl stop began (which took ${halted} ms); during the outage: $(tail -n 1 "$WORK/refused" | cut -c1-200)"
gone "$SERVER_PID" && fail "the server exited during the outage"

bash "$PG_HELPER" resume "$PG_DIR" || fail "cannot start PostgreSQL again"
t1=$(date +%s%N)
back=""
for _ in $(seq 1 400); do
  if [ "$(role)" = leader ]; then back=$(( ($(date +%s%N) - t1) / 1000000 )); break; fi
  sleep 0.05
done
[ -n "$back" ] || fail "no leader within 20 s of the database's return: $(tail -5 "$WORK/server.err.log")"
for _ in $(seq 1 200); do [ "$(wc -l <"$WORK/acked")" -gt "$acked_down" ] && break; sleep 0.05; done
[ "$(wc -l <"$WORK/acked")" -gt "$acked_down" ] || fail "submissions are not acknowledged after the database's return: $(tail -n 1 "$WORK/refused")"
touch "$WORK/stop-stream"
wait "$STREAM_PID" 2>/dev/null || true

"$ALLOT" jobs -o json >"$WORK/jobs.json" || fail "allot jobs failed after the outage"
grep -o '"name": *"s-[0-9]*"' "$WORK/jobs.json" | grep -o 's-[0-9]*' | sort -u >"$WORK/present"
acked=$(sort -u "$WORK/acked" | wc -l)
present=$(comm -12 <(sort -u "$WORK/acked") "$WORK/present" | wc -l)
missing=$(comm -23 <(sort -u "$WORK/acked") "$WORK/present" | head -5 | tr '\n' ' ')
say "leads again ${back} ms after the database's return; $acked acknowledged, $present of them present, $(wc -l <"$WORK/refused") refused"
[ "$present" = "$acked" ] || fail "acknowledged submissions are missing after the outage: $missing"
say PASS
