#!/usr/bin/env bash
# End to end: two teams sharing two emulated GPU nodes through a real server and agents, driven by the CLI.
# Borrowing, reclaim with the preempted job resuming, the replicas' environment and logs, a Kubernetes Job
# manifest, table/JSON/YAML output and the exit codes of the command-line contract.
# Usage: walkthrough_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=walkthrough
source "$(dirname "$0")/lib_e2e.sh"

start_server
start_agent gpu-1 network-node-layer-3=nn-a
start_agent gpu-2 network-node-layer-3=nn-a
write_teams
"$ALLOT" teams | grep_q "^team-a " || fail "allot teams does not list team-a"

# A replica that shows its environment, then works until stopped.
job() {  # job NAME TEAM PRIORITY REPLICAS STEPS
  cat >"$WORK/$1.yaml" <<YAML
name: $1
team: $2
priority: $3
replicas: $4
per_replica: {accelerators: 1}
topology: {required: network-node-layer-3}
command: 'echo "rank=\$RANK world=\$WORLD_SIZE local=\$LOCAL_RANK cuda=\$CUDA_VISIBLE_DEVICES job=\$ALLOT_JOB master=\$MASTER_ADDR:\$MASTER_PORT"; i=0; while [ \$i -lt $5 ]; do i=\$((i+1)); sleep 0.2; done'
YAML
}

say "borrowing: team-a runs on both nodes, one of them team-b's"
job a-1 team-a training 2 300
"$ALLOT" submit "$WORK/a-1.yaml" | grep_q "job a-1 submitted to team team-a" || fail "submit output"
wait_state a-1 Running
[ "$(job_field a-1 borrowing)" = true ] || fail "a-1 should be borrowing"
# Each replica writes its line when its process starts; the two start on
# different agents, so wait for both (waiting for one raced the other).
for _ in $(seq 1 100); do
  "$ALLOT" logs a-1 --replica 0 | grep_q "rank=0 world=2" && "$ALLOT" logs a-1 --replica 1 | grep_q "rank=1 world=2" && break
  sleep 0.1
done
"$ALLOT" logs a-1 --replica 0 | grep_q "rank=0 world=2 local=0 cuda=0 job=a-1 master=127.0.0.1:" || fail "replica 0 env: $("$ALLOT" logs a-1 --replica 0)"
"$ALLOT" logs a-1 --replica 1 | grep_q "rank=1 world=2" || fail "replica 1 env"
"$ALLOT" teams -o json | tr -d ' \n' | grep_q '"borrowed":{"accelerators":1' || fail "team-a should borrow 1 GPU"

say "reclaim: team-b takes its GPU back; a-1 is suspended and resumes when b-1 is done"
job b-1 team-b inference 1 15
"$ALLOT" submit "$WORK/b-1.yaml" >/dev/null
wait_state b-1 Running
wait_state a-1 Suspended
job_field a-1 reason | grep_q -i "reclaim" || fail "a-1's reason should name the reclaim: $(job_field a-1 reason)"
wait_state b-1 Succeeded 30
wait_state a-1 Running 30
[ "$(job_field a-1 preemptions)" = 1 ] || fail "a-1 should have been preempted once"
"$ALLOT" describe a-1 | grep_q "Suspended  Running" || fail "describe should show the resume in the history"
"$ALLOT" jobs --team team-a --state Running | grep_q "^a-1 " || fail "jobs --team --state"

say "a Kubernetes Job manifest"
"$ALLOT" cancel a-1 >/dev/null
wait_state a-1 Cancelled
cat >"$WORK/k8s-job.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: k8s-hello
  namespace: hyperpod-ns-team-b
  labels: {kueue.x-k8s.io/priority-class: training-priority}
spec:
  parallelism: 2
  template:
    metadata:
      annotations: {kueue.x-k8s.io/podset-required-topology: topology.k8s.aws/network-node-layer-3}
    spec:
      containers:
        - name: hello
          command: ["sh", "-c"]
          args: ["echo hello from rank $RANK of $WORLD_SIZE with GREETING=$GREETING"]
          env: [{name: GREETING, value: hi}]
          resources: {limits: {nvidia.com/gpu: 1}}
      restartPolicy: Never
YAML
"$ALLOT" submit "$WORK/k8s-job.yaml" >/dev/null
wait_state k8s-hello Succeeded 30
[ "$(job_field k8s-hello team)" = team-b ] || fail "the namespace should give team-b"
"$ALLOT" logs k8s-hello | grep_q "hello from rank 1 of 2 with GREETING=hi" || fail "k8s job output: $("$ALLOT" logs k8s-hello)"

say "output formats and exit codes"
# Into files first: grep -q stops reading at its match, and under pipefail a long output's SIGPIPE fails the test.
"$ALLOT" jobs -o yaml >"$WORK/jobs.yaml"
grep -q "name: k8s-hello" "$WORK/jobs.yaml" || fail "-o yaml"
"$ALLOT" nodes | grep_q "^gpu-2 *ml.g5.8xlarge *Schedulable" || fail "nodes table"
"$ALLOT" topology show | grep_q "network-node-layer-3=nn-a: gpu-1, gpu-2" || fail "topology show"
"$ALLOT" events >"$WORK/events.txt"
grep -q "admit" "$WORK/events.txt" || fail "events"
expect_rc 2 "$ALLOT" describe no-such-job
grep -q "no job named no-such-job" "$WORK/last.err" || fail "the server's message should be shown"
expect_rc 2 "$ALLOT" submit "$WORK/teams.yaml"
expect_rc 3 "$ALLOT" jobs --server http://127.0.0.1:1
grep -q "http://127.0.0.1:1" "$WORK/last.err" || fail "a connection error should name the URL"
say PASS
