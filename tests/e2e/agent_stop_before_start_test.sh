#!/usr/bin/env bash
# End to end: stops before starts (issue 33 B, issue 27 item 2). A preemptor on the victim's GPU starts only after
# the victim's process is gone (the victim ignores SIGTERM and runs out its stop grace), and meanwhile its
# description says what it waits for; a restart of a two-node job after a failure starts no rank before every rank
# of the failed run has stopped, on either node.
# Usage: agent_stop_before_start_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=agent_stop_before_start
source "$(dirname "$0")/lib_e2e.sh"
source "$(dirname "$0")/lib_marks.sh"

# The victim's stop is the window in which the preemptor's description says it waits: a stop grace of 4 s (1 s by
# default) keeps it open for longer than a CLI call takes on a loaded machine (CI, 2026-12-02: the first look came
# after the preemptor had started).
AGENT_STOP_GRACE=4
start_server
start_agent gpu-1 network-node-layer-3=nn-a
write_teams
job() {  # job NAME PRIORITY REPLICAS [SHELL]
  cat >"$WORK/$1.yaml" <<YAML
name: $1
team: team-a
priority: $2
replicas: $3
per_replica: {accelerators: 1}
max_retries: 1
command: '$(mark_command "${4:-}")'
YAML
  "$ALLOT" submit "$WORK/$1.yaml" >/dev/null
}

say "preemption on one GPU"
job low training 1
wait_state low Running
wait_mark low 0 0
job high inference 1
seen_wait=$(seen_waiting high 0 0 '"waits_for_stops"')
[ -n "$seen_wait" ] || fail "high should say that it waits for low to stop: $(job_json high)"
echo "$seen_wait" | grep_q '"job": *"low"' || fail "high should name low as what it waits for: $seen_wait"
# Either describe shows the wait, or the wait was over by then and high starts: its process writes its mark a moment
# after the agent starts it, so a loaded machine may describe it in between (CI, 2026-12-02).
"$ALLOT" describe high | grep_q "^Starting: *waits until the replicas of job low" || wait_mark high 0 0 10
wait_mark high 0 0
check_marks once after:low@0:high@0
"$ALLOT" cancel high >/dev/null
"$ALLOT" cancel low >/dev/null

say "a two-node job restarted after a failure"
start_agent gpu-2 network-node-layer-3=nn-a
for _ in $(seq 1 100); do [ -z "$(ls "$WORK/pids" | grep -E '^(high|low)-' | while read -r f; do gone "$(cat "$WORK/pids/$f")" || echo "$f"; done)" ] && break; sleep 0.1; done
# Rank 1 fails after a second on its first attempt; rank 0 outlives it by its stop grace.
job ring training 2 '[ "$RANK" = 1 ] && [ "$ALLOT_ATTEMPT" = 0 ] && { sleep 1; exit 3; }'
wait_state ring Running
wait_mark ring 0 0
for _ in $(seq 1 150); do [ "$(job_field ring restarts)" = 1 ] && break; sleep 0.1; done
[ "$(job_field ring restarts)" = 1 ] || fail "ring should restart once: $(job_json ring)"
wait_mark ring 0 1
wait_mark ring 1 1
check_marks once after:ring@0:ring@1
say PASS
