#!/usr/bin/env bash
# End to end: several clusters (docs/multicluster.md). Three servers on loopback: a manager without nodes and two
# worker clusters, east and west, each with one emulated agent (one GPU). The manager dispatches team-a's jobs to
# the worker that can admit them now and mirrors their state, logs and events; a job cancelled on the manager is cancelled
# in its worker. East is killed -9 while it runs a job: after east's lease the job is dispatched again, to west; a
# manager killed -9 and restarted keeps every copy (none lost, none made twice); when east answers again its stale
# copy is cancelled there; its copies' events are mirrored once each, also across the manager's restart.
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
# kill9 NAME: kill -9 of cluster NAME's server, waited for until it is gone (its port is free for a restart).
kill9() {
  local pid_var="PID_$1"
  kill -9 "${!pid_var}"
  for _ in $(seq 1 100); do gone "${!pid_var}" && return 0; sleep 0.1; done
  fail "server $1 outlived kill -9 for 10 s"
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
# submit_job NAME COMMAND: a one-GPU job of team-a, submitted to the manager.
submit_job() {
  printf 'name: %s\nteam: team-a\nper_replica: {accelerators: 1}\ncommand: %s\n' "$1" "'$2'" >"$WORK/$1.yaml"
  on manager submit "$WORK/$1.yaml" >/dev/null || fail "submit $1"
}
# mirrored COPY: how many of COPY's events the manager's event log mirrors.
mirrored() { on manager events 2>/dev/null | grep -c "as job $1 (its event [0-9]*," || true; }
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
# The workers' failure timeout is long: east's agent must not fence its replica (3/4 of it without a server) while
# east is down below, however slowly the steps between its kill and its restart run on a loaded machine; its stale
# copy is to be cancelled by the restarted east, not ended by the fence.
WORKER_HB_TIMEOUT=60
for w in east west; do
  cluster "$w" --heartbeat-timeout $WORKER_HB_TIMEOUT
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
submit_job train 'echo training; sleep 600'
wait_field manager train reason_code remote_running
[ "$(field manager train state)" = Pending ] || fail "the manager runs nothing of train itself"
[ "$(copy_worker train)" = east ] || fail "train went to '$(copy_worker train)', not east"
wait_field east train-1 state Running
[ "$(on manager nodes -o json 2>/dev/null | tr -d ' \n')" = "[]" ] || fail "the manager has no nodes: $(on manager nodes 2>&1)"

# East is full now: the next job goes to west, runs there and ends; its end and its log come back to the manager.
submit_job quick 'echo hello from quick; sleep 2'
wait_field manager quick state Succeeded
field manager quick reason | grep_q "in worker cluster west as job quick-1" || fail "quick's reason: $(field manager quick reason)"
on manager logs quick | grep_q "hello from quick" || fail "allot logs on the manager reads the copy's log: $(on manager logs quick 2>&1)"
# Its events in west (submitted, admitted there) are the manager's events too, each once.
on manager events >"$WORK/quick-events" 2>&1 || fail "allot events on the manager"
grep_q "as job quick-1 (its event [0-9]*, admit): " "$WORK/quick-events" || fail "west's admit event of quick-1 is not mirrored: $(cat "$WORK/quick-events")"
[ "$(grep -c "as job quick-1 (its event [0-9]*, admit): " "$WORK/quick-events")" = 1 ] || fail "quick-1's admit event is mirrored more than once"

# Cancel on the manager cancels the copy in its worker.
submit_job doomed 'sleep 600'
wait_field manager doomed reason_code remote_running
[ "$(copy_worker doomed)" = west ] || fail "doomed went to '$(copy_worker doomed)', not west"
on manager cancel doomed >/dev/null || fail "cancel doomed"
wait_field west doomed-1 state Cancelled

# East dies with train running there. Its lease (3 s) runs out, then train goes to west (free again).
kill9 east
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

# The manager killed -9 and restarted: the same copies, none made twice, and no event of theirs mirrored twice.
for _ in $(seq 1 100); do [ "$(mirrored train-2)" -ge 2 ] && break; sleep 0.1; done
before=$(mirrored train-2)
[ "$before" -ge 2 ] || fail "train-2's events in west (submitted, admitted) are not mirrored: $(on manager events 2>&1 | grep train)"
kill9 manager
# Restarted with a dispatch timeout (used below): copies that do not wait are not affected by it.
sed 's/^poll: 1$/poll: 1\ndispatch_timeout: 3/' "$WORK/workers.yaml" >"$WORK/workers-timeout.yaml"
cluster manager --workers "$WORK/workers-timeout.yaml"
wait_field manager train reason_code remote_running
sleep 3  # three looks of the restarted dispatcher (poll 1 s)
[ "$(mirrored train-2)" = "$before" ] || fail "the restarted manager mirrored train-2's events again: $before before, $(mirrored train-2) after"
[ "$(field manager train dispatches)" = 2 ] || fail "train has $(field manager train dispatches) dispatches after the restart"
[ "$(on west jobs -o json | grep -o '"name": *"train-[0-9]*"' | sort -u | wc -l)" = 1 ] || fail "west has more than one copy of train"
on manager describe train -o json | tr -d '\n ' | grep_q '"stale":\[{"copy":"train-1","worker":"east"}\]' || fail "east's copy is stale: $(on manager describe train -o json)"

# East answers again: its stale copy is cancelled there, and train stays on west.
cluster east --heartbeat-timeout $WORKER_HB_TIMEOUT
wait_field east train-1 state Cancelled
for _ in $(seq 1 50); do on manager describe train -o json | tr -d '\n ' | grep_q '"stale":\[\]' && break; sleep 0.1; done
on manager describe train -o json | tr -d '\n ' | grep_q '"stale":\[\]' || fail "the stale copy was not withdrawn"
[ "$(copy_worker train)" = west ] || fail "train left west"
[ "$(field west train-2 state)" = Running ] || fail "train-2 stopped on west"

# A copy its worker cannot admit after all: east's only node is reserved for another user of team-a, which the
# manager's views (free accelerators, the team's headroom) do not show. After the dispatch timeout (3 s) the copy
# is cancelled there and the job dispatched again; while east is the only worker with room it goes back there, and
# once west has room (train cancelled) it goes to west and runs.
on east reservation create hold --team team-a --user alice --nodes gpu-east --start now --end +1h >/dev/null ||
  fail "reservation on east: $(on east reservation create hold --team team-a --user alice --nodes gpu-east --start now --end +1h 2>&1)"
submit_job stuck 'echo stuck ran; sleep 600'
for _ in $(seq 1 100); do [ "$(copy_worker stuck)" = east ] && break; sleep 0.1; done
[ "$(copy_worker stuck)" = east ] || fail "stuck went to '$(copy_worker stuck)', not east (the only worker with room)"
for _ in $(seq 1 200); do on manager describe stuck -o json | grep_q "within the dispatch timeout of 3 s" && break; sleep 0.1; done
on manager describe stuck -o json | grep_q "within the dispatch timeout of 3 s" || fail "stuck-1 was not withdrawn: $(on manager describe stuck)"
wait_field east stuck-1 state Cancelled
on manager cancel train >/dev/null || fail "cancel train"
wait_field manager stuck reason_code remote_running 40
[ "$(copy_worker stuck)" = west ] || fail "stuck runs in '$(copy_worker stuck)', not west"
for c in $(on east jobs -o json | grep -o '"name": *"stuck-[0-9]*"' | grep -o 'stuck-[0-9]*'); do
  [ "$(field east "$c" state)" = Cancelled ] || fail "east's copy $c of stuck is $(field east "$c" state), not Cancelled"
done
say PASS
