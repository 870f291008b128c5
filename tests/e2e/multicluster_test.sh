#!/usr/bin/env bash
# End to end: several clusters (docs/multicluster.md). Three servers on loopback: a manager without nodes and two
# worker clusters, east and west, each with one emulated agent (one GPU). The manager dispatches team-a's jobs to
# the worker that can admit them now and mirrors their state and logs; a job cancelled on the manager is cancelled
# in its worker. East is killed -9 while it runs a job: after east's lease the job is dispatched again, to west; a
# manager killed -9 and restarted keeps every copy (none lost, none made twice); when east answers again its stale
# copy is cancelled there.
# Usage: multicluster_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=multicluster
source "$(dirname "$0")/lib_e2e.sh"

ADMIN_TOKEN=""
# cluster NAME [flags]: a server with its data in $WORK/NAME on port PORT_NAME (a free one the first time, the same
# one again after a kill); sets URL_NAME and PID_NAME.
cluster() {
  local name=$1; shift
  local port_var="PORT_$name" port=0
  [ -n "${!port_var:-}" ] && port=${!port_var}
  : >"$WORK/$name.log"
  "$ALLOT" server --listen "127.0.0.1:$port" --data "$WORK/$name" --master-ports "$((20000 + ($$ % 1270) * 10))-$((20009 + ($$ % 1270) * 10))" \
    "$@" >"$WORK/$name.log" 2>>"$WORK/$name.err.log" &
  local pid=$! url=""
  PIDS+=("$pid")
  eval "PID_$name=$pid"
  for _ in $(seq 1 100); do
    url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$WORK/$name.log" 2>/dev/null | head -n1 || true)
    [ -n "$url" ] && break
    gone "$pid" && fail "server $name exited at start: $(tail -n 5 "$WORK/$name.err.log")"
    sleep 0.1
  done
  [ -n "$url" ] || fail "server $name did not print its URL within 10 s"
  eval "URL_$name=$url"
  eval "PORT_$name=${url##*:}"
}
# on NAME COMMAND...: runs the CLI against cluster NAME as its admin.
on() {
  local name=$1; shift
  local url_var="URL_$name"
  ALLOT_SERVER=${!url_var} ALLOT_TOKEN=$(cat "$WORK/$name/admin-token") "$ALLOT" "$@"
}
# field NAME JOB KEY: a scalar of the job on cluster NAME (as job_field, on that cluster).
field() {
  on "$1" describe "$2" -o json | tr -d '\n' | sed -e 's/"history": *\[[^]]*\]//' | grep -o "\"$3\": *[^,}]*" | head -n1 |
    sed -e "s/\"$3\": *//" -e 's/^"//' -e 's/"$//'
}
# wait_field NAME JOB KEY WANT [SECONDS]
wait_field() {
  local got=""
  for _ in $(seq 1 $((${5:-30} * 10))); do
    got=$(field "$1" "$2" "$3" 2>/dev/null || true)
    [ "$got" = "$4" ] && return 0
    sleep 0.1
  done
  fail "job $2 on $1: $3 is '$got', not '$4': $(field "$1" "$2" reason 2>/dev/null || true)"
}
# The worker the manager's job's live copy is in ("" when none).
copy_worker() { on manager describe "$1" -o json | tr -d '\n ' | grep -o '"copy":{"copy":"[^"]*","worker":"[^"]*"' | sed 's/.*"worker":"//; s/"$//'; }

write_teams_file() {
  cat >"$WORK/teams.yaml" <<'YAML'
teams:
  - name: team-a
    allocation:
      - {instance_type: ml.g5.8xlarge, instances: 1}
YAML
}
write_teams_file
for w in east west; do
  cluster "$w"
  on "$w" apply "$WORK/teams.yaml" >/dev/null || fail "apply on $w"
  on "$w" token create --role member --team team-a --description manager >"$WORK/$w.token" || fail "member token on $w"
  on "$w" token create --role agent-join --description e2e >"$WORK/$w.join" || fail "join token on $w"
  url_var="URL_$w"
  "$ALLOT" agent --server "${!url_var}" --name "gpu-$w" --instance-type ml.g5.8xlarge --work-dir "$WORK/agents/$w" \
    --token-file "$WORK/$w.join" --heartbeat-interval 0.2 --stop-grace 1 $AGENT_USER_FLAGS >>"$WORK/agent-$w.log" 2>&1 &
  PIDS+=("$!")
  for _ in $(seq 1 100); do on "$w" nodes 2>/dev/null | grep_q "^gpu-$w .*Schedulable" && break; sleep 0.1; done
  on "$w" nodes | grep_q "^gpu-$w .*Schedulable" || fail "agent of $w did not register"
done
cat >"$WORK/workers.yaml" <<YAML
teams: [team-a]
lease: 3
poll: 1
workers:
  - {name: east, url: "$URL_east", token_file: "$WORK/east.token"}
  - {name: west, url: "$URL_west", token_file: "$WORK/west.token"}
YAML
cluster manager --workers "$WORK/workers.yaml"
on manager apply "$WORK/teams.yaml" >/dev/null || fail "apply on the manager"
grep_q "$(cat "$WORK/east.token")" "$WORK/manager.log" "$WORK/manager.err.log" && fail "the manager logged a worker's token"
on manager workers | grep_q "^east " || fail "allot workers lists east: $(on manager workers 2>&1)"

# Dispatched to the worker that can admit it now (both can: the first by name), running there, mirrored here.
cat >"$WORK/train.yaml" <<YAML
name: train
team: team-a
per_replica: {accelerators: 1}
command: 'echo training; sleep 600'
YAML
on manager submit "$WORK/train.yaml" >/dev/null || fail "submit train"
wait_field manager train reason_code remote_running
[ "$(field manager train state)" = Pending ] || fail "the manager runs nothing of train itself"
[ "$(copy_worker train)" = east ] || fail "train went to '$(copy_worker train)', not east"
wait_field east train-1 state Running
[ "$(on manager nodes -o json 2>/dev/null | tr -d ' \n')" = "[]" ] || fail "the manager has no nodes: $(on manager nodes 2>&1)"

# East is full now: the next job goes to west, runs there and ends; its end and its log come back to the manager.
cat >"$WORK/quick.yaml" <<YAML
name: quick
team: team-a
per_replica: {accelerators: 1}
command: 'echo hello from quick; sleep 2'
YAML
on manager submit "$WORK/quick.yaml" >/dev/null || fail "submit quick"
wait_field manager quick state Succeeded
field manager quick reason | grep_q "in worker cluster west as job quick-1" || fail "quick's reason: $(field manager quick reason)"
on manager logs quick | grep_q "hello from quick" || fail "allot logs on the manager reads the copy's log: $(on manager logs quick 2>&1)"

# Cancel on the manager cancels the copy in its worker.
cat >"$WORK/doomed.yaml" <<YAML
name: doomed
team: team-a
per_replica: {accelerators: 1}
command: 'sleep 600'
YAML
on manager submit "$WORK/doomed.yaml" >/dev/null || fail "submit doomed"
wait_field manager doomed reason_code remote_running
[ "$(copy_worker doomed)" = west ] || fail "doomed went to '$(copy_worker doomed)', not west"
on manager cancel doomed >/dev/null || fail "cancel doomed"
wait_field west doomed-1 state Cancelled

# East dies with train running there. Its lease (3 s) runs out, then train goes to west (free again).
kill -9 "$PID_east"
wait_field manager train dispatches 2 40
[ "$(copy_worker train)" = west ] || fail "train went again to '$(copy_worker train)', not west"
on manager events 2>/dev/null | grep -n "train" >"$WORK/train-events" || true
lost_at=$(grep -n "was lost" "$WORK/train-events" | head -n1 | cut -d: -f1)
again_at=$(grep -n "train-2" "$WORK/train-events" | head -n1 | cut -d: -f1)
[ -n "$lost_at" ] && [ -n "$again_at" ] && [ "$lost_at" -lt "$again_at" ] || fail "train was dispatched again before east was lost: $(cat "$WORK/train-events")"
field manager train reason | grep_q "" || true
on manager describe train -o json | tr -d '\n' | grep_q "its lease is 3 s" || fail "the history says why east was lost"
wait_field west train-2 state Running
wait_field manager train reason_code remote_running

# The manager killed -9 and restarted: the same copies, none made twice.
kill -9 "$PID_manager"
cluster manager --workers "$WORK/workers.yaml"
wait_field manager train reason_code remote_running
[ "$(field manager train dispatches)" = 2 ] || fail "train has $(field manager train dispatches) dispatches after the restart"
[ "$(on west jobs -o json | grep -o '"name": *"train-[0-9]*"' | sort -u | wc -l)" = 1 ] || fail "west has more than one copy of train"
on manager describe train -o json | tr -d '\n ' | grep_q '"stale":\[{"copy":"train-1","worker":"east"}\]' || fail "east's copy is stale: $(on manager describe train -o json)"

# East answers again: its stale copy is cancelled there, and train stays on west.
cluster east
wait_field east train-1 state Cancelled
for _ in $(seq 1 50); do on manager describe train -o json | tr -d '\n ' | grep_q '"stale":\[\]' && break; sleep 0.1; done
on manager describe train -o json | tr -d '\n ' | grep_q '"stale":\[\]' || fail "the stale copy was not withdrawn"
[ "$(copy_worker train)" = west ] || fail "train left west"
[ "$(field west train-2 state)" = Running ] || fail "train-2 stopped on west"
say PASS
