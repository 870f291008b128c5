#!/usr/bin/env bash
# End to end: two servers on one PostgreSQL (docs/deployment.md), two emulated agents and the CLI given both
# URLs, a running job, and a stream of submissions while the leader is killed with SIGKILL. The standby takes the
# lead; every submission that was acknowledged is there afterwards; the running job's replica keeps running (same
# process, no restart); the agents heartbeat to the new leader (their nodes stay Schedulable past the heartbeat
# timeout); the new leader admits a new job. Prints the failover time and the acknowledged-vs-present counts.
# Then the new leader hangs (SIGSTOP: it keeps its database session and its lock): a third server, a standby,
# takes over once the hung leader's lease expired (docs/deployment.md), within 10 s; resumed, the old leader
# writes nothing.
# Usage: failover_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=failover
source "$(dirname "$0")/lib_e2e.sh"
source "$(dirname "$0")/lib_faults.sh"

start_postgres

HB_TIMEOUT=4
# start_pg_server NAME: a server on a free loopback port on the shared database; sets URL_<NAME> and PID_<NAME>.
start_pg_server() {
  local name=$1
  : >"$WORK/server-$name.out"  # a restarted server's: the loop below must not read the previous one's URL
  "$ALLOT" server --listen 127.0.0.1:0 --data "$WORK/$name" --database "$PG_URL" --heartbeat-timeout $HB_TIMEOUT \
    >"$WORK/server-$name.out" 2>"$WORK/server-$name.log" &
  local pid=$! url=""
  PIDS+=("$pid")
  for _ in $(seq 1 100); do
    url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$WORK/server-$name.out" 2>/dev/null | head -n1 || true)
    [ -n "$url" ] && break
    gone "$pid" && fail "server $name exited at start"
    sleep 0.1
  done
  [ -n "$url" ] || fail "server $name did not print its URL within 10 s"
  eval "URL_$name=$url PID_$name=$pid"
}
# role_of URL: leader or standby, from GET /v1/health (bash's /dev/tcp: no HTTP client needed).
role_of() {
  local hp=${1#http://}
  timeout 2 bash -c "exec 3<>/dev/tcp/${hp%:*}/${hp##*:} && printf 'GET /v1/health HTTP/1.0\r\n\r\n' >&3 && cat <&3" 2>/dev/null |
    grep -o '"role": *"[a-z]*"' | grep -o '[a-z]*"$' | tr -d '"' || true
}

start_pg_server a
start_pg_server b
[ "$(role_of "$URL_a")" = leader ] || fail "the first server should lead"
[ "$(role_of "$URL_b")" = standby ] || fail "the second server should be a standby"
say "leader $URL_a, standby $URL_b"

# The CLI and the agents know both servers.
export ALLOT_SERVER="$URL_a,$URL_b"
ALLOT_TOKEN=$(cat "$WORK/a/admin-token")
export ALLOT_TOKEN
"$ALLOT" token create --role agent-join --description e2e-agents >"$WORK/join-token" 2>/dev/null || fail "cannot make a join token"
start_agent gpu-1 network-node-layer-3=nn-a
start_agent gpu-2 network-node-layer-3=nn-a

cat >"$WORK/teams.yaml" <<'YAML'
teams:
  - name: team-a
    allocation:
      - {instance_type: ml.g5.8xlarge, instances: 1}
    sharing: {strategy: DontLend}
  - name: team-b
    allocation:
      - {instance_type: ml.g5.8xlarge, instances: 1}
    sharing: {strategy: DontLend}
YAML
"$ALLOT" apply "$WORK/teams.yaml" >/dev/null || fail "allot apply failed"
cat >"$WORK/long.yaml" <<YAML
name: long
team: team-a
replicas: 1
per_replica: {accelerators: 1}
command: '$NODE_PID > $WORK/pids/long; while :; do sleep 0.2; done'
YAML
"$ALLOT" submit "$WORK/long.yaml" >/dev/null
wait_state long Running
for _ in $(seq 1 50); do [ -s "$WORK/pids/long" ] && break; sleep 0.1; done
LONG_PID=$(cat "$WORK/pids/long")
say "job long runs as pid $LONG_PID"

# The stream: team-a's quota is taken by `long` and nobody lends, so these stay Pending; each name goes to
# acked when `allot submit` succeeded (the server answered 201), to failed otherwise.
: >"$WORK/acked"; : >"$WORK/failed"
(
  i=0
  while [ ! -e "$WORK/stop-stream" ]; do
    i=$((i + 1))
    if printf '{"name": "s-%d", "team": "team-a", "per_replica": {"accelerators": 1}, "command": "true"}' "$i" |
        "$ALLOT" submit - >/dev/null 2>>"$WORK/stream.err"; then
      echo "s-$i" >>"$WORK/acked"
    else
      echo "s-$i" >>"$WORK/failed"
    fi
  done
) &
STREAM_PID=$!
PIDS+=("$STREAM_PID")
for _ in $(seq 1 100); do [ "$(wc -l <"$WORK/acked")" -ge 20 ] && break; sleep 0.05; done
[ "$(wc -l <"$WORK/acked")" -ge 20 ] || fail "the submission stream did not get going: $(tail -3 "$WORK/stream.err")"

before=$(wc -l <"$WORK/acked")
say "killing the leader (pid $PID_a) with SIGKILL after $before acknowledged submissions"
t0=$(date +%s%N)
kill -9 "$PID_a"
wait "$PID_a" 2>/dev/null || true
took=""
for _ in $(seq 1 300); do
  if [ "$(role_of "$URL_b")" = leader ]; then took=$(( ($(date +%s%N) - t0) / 1000000 )); break; fi
  sleep 0.05
done
[ -n "$took" ] || fail "the standby did not take the lead within 15 s"
# The first submission acknowledged after the kill: when clients could write again.
n_at_kill=$before
for _ in $(seq 1 200); do [ "$(wc -l <"$WORK/acked")" -gt "$n_at_kill" ] && break; sleep 0.05; done
writes_back=$(( ($(date +%s%N) - t0) / 1000000 ))
sleep 1
touch "$WORK/stop-stream"
wait "$STREAM_PID" 2>/dev/null || true

acked=$(sort -u "$WORK/acked" | wc -l)
failed=$(wc -l <"$WORK/failed")
"$ALLOT" jobs -o json >"$WORK/jobs.json" || fail "allot jobs failed after the failover"
grep -o '"name": *"s-[0-9]*"' "$WORK/jobs.json" | grep -o 's-[0-9]*' | sort -u >"$WORK/present"
present=$(comm -12 <(sort -u "$WORK/acked") "$WORK/present" | wc -l)
missing=$(comm -23 <(sort -u "$WORK/acked") "$WORK/present" | head -5 | tr '\n' ' ')
say "failover: new leader after ${took} ms, submissions acknowledged again after ${writes_back} ms (heartbeat timeout ${HB_TIMEOUT}s)"
say "submissions: $acked acknowledged, $present of them present, $failed not acknowledged (cut off by the kill or refused during the failover)"
[ "$present" = "$acked" ] || fail "acknowledged submissions are missing after the failover: $missing"

# The running job kept running: same run, same process.
[ "$(job_field long state)" = Running ] || fail "long should still run: $(job_field long state) $(job_field long reason)"
[ "$(job_field long restarts)" = 0 ] || fail "long should not have restarted"
kill -0 "$LONG_PID" 2>/dev/null || fail "the replica of long (pid $LONG_PID) should have kept running"

# The agents re-attached: past a whole heartbeat timeout since the takeover, their nodes are still Schedulable,
# which the new leader only keeps for nodes that heartbeat to it.
sleep $((HB_TIMEOUT + 1))
"$ALLOT" nodes >"$WORK/nodes.txt"
grep -q "^gpu-1 .*Schedulable" "$WORK/nodes.txt" && grep -q "^gpu-2 .*Schedulable" "$WORK/nodes.txt" ||
  fail "the agents did not re-attach to the new leader: $(cat "$WORK/nodes.txt")"
grep -q "Unschedulable" "$WORK/nodes.txt" && fail "a node timed out after the failover: $(cat "$WORK/nodes.txt")"
kill -0 "$LONG_PID" 2>/dev/null || fail "the replica of long was stopped after the failover"

# The new leader admits: team-b's job runs on the free node.
printf '{"name": "after", "team": "team-b", "per_replica": {"accelerators": 1}, "command": "sleep 30"}' | "$ALLOT" submit - >/dev/null
wait_state after Running

# A hung leader: frozen, b keeps its session and its advisory lock. The standby c takes over when b's lease
# (5 s) expires, ending b's session; writes to c are acknowledged again within 10 s of the freeze.
start_pg_server c
[ "$(role_of "$URL_c")" = standby ] || fail "the third server should be a standby"
say "freezing the leader b (pid $PID_b) with SIGSTOP"
t0=$(( $(date +%s%N) / 1000000 ))
fault_freeze "$PID_b"
STREAM_URL=$URL_c stream_start team-a 0
for _ in $(seq 1 300); do [ "$(acked_after "$t0")" -gt 0 ] && break; sleep 0.05; done
first_ok=$(awk '$3 == "ok" {print $1; exit}' "$WORK/stream")
[ -n "$first_ok" ] || { fault_thaw "$PID_b"; fail "no write was acknowledged within 15 s of the leader freezing: $(tail -3 "$WORK/stream.err")"; }
resumed=$((first_ok - t0))
say "hung leader: writes acknowledged again $resumed ms after it froze (bound: 10000 ms)"
[ "$resumed" -le 10000 ] || { fault_thaw "$PID_b"; fail "writes resumed only after $resumed ms"; }
fault_thaw "$PID_b"
# Resumed, b finds its session ended and its epoch superseded: a write sent to it is not acknowledged.
code=$(curl -s --max-time 10 -o "$WORK/zombie-answer" -w '%{http_code}' -X POST -H "Authorization: Bearer $ALLOT_TOKEN" \
  -H 'Content-Type: application/json' --data '{"name": "zombie", "team": "team-a", "replicas": 64, "per_replica": {"accelerators": 1}, "command": "true"}' \
  "$URL_b/v1/jobs" || true)
say "a write sent to the resumed old leader: HTTP $code"
[ "$code" != 201 ] || fail "the resumed old leader acknowledged a write: $(cat "$WORK/zombie-answer")"
sleep 1
stream_stop
export ALLOT_SERVER="$URL_c"
"$ALLOT" jobs -o json | grep_q '"zombie"' && fail "the old leader's write reached the journal"
figures failover_hung_leader 0
say PASS
