#!/usr/bin/env bash
# End to end: the command line as operators used to kubectl, Slurm and hyp type it (issue 15). Unknown
# commands name themselves and the closest known one; help, --version, version (client and server),
# completion for bash; a man page; client flags before the command; case-insensitive --state; -o wide; jobs --watch;
# logs --tail counting lines, -o json and -f; cancel of several jobs and of a team's; events --job;
# nodes apply, node delete, allocation get; job labels and selectors, hold/release, set priority, delete and
# submit --replace; export kueue from a live server; kubectl's words (get, describe KIND/NAME, delete job NAME,
# -f FILE, -o=json, -o name, --no-headers) and --queue-name on a manifest without a team; issue 28: instance types
# from the policy file (--instance-types), which allocation set, nodes apply and apply take from the server, a team's default request, describe's requests, retries and ranks,
# JOB_COMPLETION_INDEX, submit --dry-run asking the server and files submitted all or nothing.
# Usage: cli_habits_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=cli_habits
source "$(dirname "$0")/lib_e2e.sh"

# --- before any server ---
expect_rc 2 "$ALLOT" nodez
grep -q "unknown command 'nodez'; did you mean 'nodes'?" "$WORK/last.err" || fail "nodez: $(cat "$WORK/last.err")"
expect_rc 2 "$ALLOT" node remove n-1
grep -q "unknown command 'node remove'" "$WORK/last.err" && grep -q "delete" "$WORK/last.err" ||
  fail "node remove should be named and the subcommands listed: $(cat "$WORK/last.err")"
expect_rc 2 "$ALLOT" descrbe job-1
grep -q "did you mean 'describe'" "$WORK/last.err" || fail "descrbe: $(cat "$WORK/last.err")"
expect_rc 0 "$ALLOT" help node drain
grep -q "Usage: allot node drain" "$WORK/last.out" || fail "allot help node drain: $(cat "$WORK/last.out")"
expect_rc 0 "$ALLOT" --version
grep -qx "allot [0-9][0-9.]*" "$WORK/last.out" || fail "--version: $(cat "$WORK/last.out")"
"$ALLOT" completion bash >"$WORK/completion.bash"
words() { bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _allot; echo "${COMPREPLY[*]}"' _ "$WORK/completion.bash" "$@"; }
[ "$(words allot nod)" = "nodes node" ] || fail "completion of 'nod': '$(words allot nod)'"
[ "$(words allot node d)" = "drain delete" ] || fail "completion of 'node d': '$(words allot node d)'"
words allot logs --t | grep_q -w -- "--tail" || fail "completion of 'logs --t': '$(words allot logs --t)'"
"$ALLOT" man >"$WORK/allot.1"
grep -q '^.TH ALLOT 1' "$WORK/allot.1" && grep -q '^.SS allot node drain$' "$WORK/allot.1" && grep -q '^.B \\-\\-tail$' "$WORK/allot.1" ||
  fail "allot man should hold every command and flag: $(head -n 5 "$WORK/allot.1")"
"$ALLOT" completion zsh >"$WORK/completion.zsh"
grep -q "bashcompinit" "$WORK/completion.zsh" || fail "zsh completion should load bashcompinit"

# The policy file's instance_types section (issue 28 item 16): the server and an agent read it at start.
cat >"$WORK/types.yaml" <<'YAML'
instance_types:
  - {name: ml.lab.cpu16, vcpus: 16, memory_gib: 64}
  - {name: ml.c5.4xlarge, vcpus: 16, memory_gib: 32}   # a built-in type with its own figures: accepted
YAML
cat >"$WORK/types-bad.yaml" <<'YAML'
instance_types:
  - {name: ml.c5.4xlarge, vcpus: 8, memory_gib: 32}
YAML
expect_rc 2 "$ALLOT" server --listen 127.0.0.1:0 --data "$WORK/bad-server" --instance-types "$WORK/types-bad.yaml"
grep -q "ml.c5.4xlarge is built in with other figures: vcpus 8 (not 16)" "$WORK/last.err" && grep -q "replaces_builtin: true" "$WORK/last.err" ||
  fail "a policy file's type that shadows a built-in one should be refused: $(cat "$WORK/last.err")"
start_server --instance-types "$WORK/types.yaml"
start_agent gpu-1 network-node-layer-3=nn-a
write_teams
expect_rc 0 "$ALLOT" version
grep -q "^client: allot " "$WORK/last.out" && grep -q "^server: allot .* at $ALLOT_SERVER" "$WORK/last.out" ||
  fail "allot version: $(cat "$WORK/last.out")"

# export kueue from the live server (a viewer's token is enough): the same objects as from the file applied,
# with the agent's node in it.
cat "$WORK/teams.yaml" - >"$WORK/teams-nodes.yaml" <<'YAML'
cluster:
  nodes:
    - {name: gpu-1, instance_type: ml.g5.8xlarge, labels: {network-node-layer-3: nn-a}}
YAML
"$ALLOT" export kueue "$WORK/teams-nodes.yaml" >"$WORK/kueue-file.yaml" || fail "export kueue from the file"
viewer=$("$ALLOT" token create --role viewer 2>/dev/null) || fail "cannot make a viewer token"
ALLOT_TOKEN=$viewer "$ALLOT" export kueue --server "$ALLOT_SERVER" >"$WORK/kueue-live.yaml" ||
  fail "export kueue --server: $(cat "$WORK/kueue-live.yaml")"
diff "$WORK/kueue-file.yaml" "$WORK/kueue-live.yaml" >"$WORK/kueue.diff" ||
  fail "export kueue --server should match the export of the file applied: $(cat "$WORK/kueue.diff")"
grep -q "kind: ClusterQueue" "$WORK/kueue-live.yaml" || fail "export kueue --server: no ClusterQueue: $(cat "$WORK/kueue-live.yaml")"

cat >"$WORK/lines.yaml" <<'YAML'
name: lines
team: team-a
per_replica: {accelerators: 1}
command: 'for i in 1 2 3 4 5; do echo "line $i of a log whose lines are longer than a few bytes"; done'
YAML
"$ALLOT" submit "$WORK/lines.yaml" >/dev/null
wait_state lines Succeeded
"$ALLOT" logs lines --tail 2 >"$WORK/tail.out"
[ "$(wc -l <"$WORK/tail.out")" = 2 ] && head -n1 "$WORK/tail.out" | grep_q "^line 4 of" ||
  fail "logs --tail 2 should be the last two lines: $(cat "$WORK/tail.out")"
"$ALLOT" logs lines -o json >"$WORK/logs.json"
grep -q '"rank": 0' "$WORK/logs.json" && grep -q 'line 5 of a log' "$WORK/logs.json" || fail "logs -o json: $(cat "$WORK/logs.json")"
# Client flags before the command, any case for states.
"$ALLOT" --server "$ALLOT_SERVER" -o json jobs --state succeeded >"$WORK/jobs.json"
grep -q '"name": "lines"' "$WORK/jobs.json" || fail "--server before the command, --state succeeded: $(cat "$WORK/jobs.json")"
"$ALLOT" jobs --state RUNNING >"$WORK/running.out"
grep -q lines "$WORK/running.out" && fail "--state RUNNING should not list a finished job"

# logs -f follows a running job to its end.
cat >"$WORK/ticks.yaml" <<'YAML'
name: ticks
team: team-a
per_replica: {accelerators: 1}
command: 'for i in 1 2 3 4; do echo "tick $i"; sleep 0.5; done'
YAML
"$ALLOT" submit "$WORK/ticks.yaml" >/dev/null
timeout 60 "$ALLOT" logs ticks -f >"$WORK/follow.out" || fail "logs -f did not end with its job: $(cat "$WORK/follow.out")"
[ "$(grep -c '^tick' "$WORK/follow.out")" = 4 ] || fail "logs -f should print each tick once: $(cat "$WORK/follow.out")"

# Jobs that cannot start (more GPUs than the node has) wait; cancel takes several names, and --team.
for j in big-1 big-2 big-3; do
  printf 'name: %s\nteam: team-b\nper_replica: {accelerators: 8}\ncommand: "true"\n' "$j" >"$WORK/$j.yaml"
  "$ALLOT" submit "$WORK/$j.yaml" >/dev/null
done
printf 'name: huge\nteam: team-b\ninstance_type: ml.g5.8xlarge\nper_replica: {accelerators: 4}\ncommand: "true"\n' >"$WORK/huge.yaml"
"$ALLOT" submit "$WORK/huge.yaml" >/dev/null 2>"$WORK/huge.err"
grep -q "warning: job huge: one replica asks for 4 accelerators.*it can never be placed" "$WORK/huge.err" ||
  fail "a replica larger than its node should be warned about: $(cat "$WORK/huge.err")"
"$ALLOT" jobs -o wide >"$WORK/wide.out"
reason=$(job_field big-1 reason)
grep -qF "$reason" "$WORK/wide.out" || fail "-o wide should show the whole reason '$reason': $(cat "$WORK/wide.out")"
set +e
timeout 3 "$ALLOT" jobs -w --interval 0.5 >"$WORK/watch.out" 2>&1
set -e
grep -q "^NAME" "$WORK/watch.out" && grep -q "big-1" "$WORK/watch.out" || fail "jobs -w: $(cat "$WORK/watch.out")"
"$ALLOT" cancel big-1 big-2 >/dev/null
wait_state big-1 Cancelled
wait_state big-2 Cancelled
"$ALLOT" cancel --team team-b >"$WORK/cancel-team.out"
grep -q "big-3" "$WORK/cancel-team.out" || fail "cancel --team: $(cat "$WORK/cancel-team.out")"
wait_state big-3 Cancelled
"$ALLOT" events --job big-2 >"$WORK/events.out"
[ -s "$WORK/events.out" ] || fail "events --job big-2 printed nothing"
grep -v "big-2" "$WORK/events.out" && fail "events --job big-2 printed other subjects"

# Nodes from a file, node delete, allocation get.
printf 'nodes:\n  - {name: static-1, instance_type: ml.g5.8xlarge}\n' >"$WORK/nodes.yaml"
"$ALLOT" nodes apply "$WORK/nodes.yaml" >"$WORK/applied.out"
grep -q "^static-1 " "$WORK/applied.out" || fail "nodes apply should list the new node: $(cat "$WORK/applied.out")"
"$ALLOT" node delete static-1 >"$WORK/deleted.out"
grep -q "node static-1 deleted" "$WORK/deleted.out" || fail "node delete: $(cat "$WORK/deleted.out")"
"$ALLOT" nodes >"$WORK/nodes.out"
grep -q "^static-1 " "$WORK/nodes.out" && fail "static-1 is still listed after node delete"
"$ALLOT" allocation get team-a >"$WORK/alloc.out"
grep -q "^ml.g5.8xlarge  *1 " "$WORK/alloc.out" || fail "allocation get team-a: $(cat "$WORK/alloc.out")"
# Kueue priority-class labels: the class as written first, then without -priority. hyp-style flags.
"$ALLOT" priority-class set gold-priority 90 >/dev/null
manifest() {  # manifest PRIORITY-LABEL: a Job with generateName, one GPU, that waits (8 GPUs asked)
  printf 'apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: kueue-sample-\n  namespace: hyperpod-ns-team-a\n  labels: {kueue.x-k8s.io/priority-class: %s}\nspec:\n  template:\n    spec:\n      containers:\n        - {name: main, image: busybox, command: ["true"], resources: {limits: {nvidia.com/gpu: "8"}}}\n' "$1"
}
manifest gold-priority >"$WORK/gold.yaml"
manifest training-priority >"$WORK/training.yaml"
"$ALLOT" -o json submit "$WORK/gold.yaml" >"$WORK/gold.json" 2>"$WORK/gold.err"
grep -q '"priority": "gold-priority"' "$WORK/gold.json" || fail "label gold-priority should pick the class gold-priority: $(cat "$WORK/gold.json")"
grep -q "the job is named kueue-sample-" "$WORK/gold.err" || fail "the generated name should be printed: $(cat "$WORK/gold.err")"
grep -q '"image": "busybox"' "$WORK/gold.json" || fail "the manifest's image should be the job's: $(cat "$WORK/gold.json")"
grep -q '"pull_policy": "Always"' "$WORK/gold.json" || fail "an image without a tag is pulled Always: $(cat "$WORK/gold.json")"
"$ALLOT" -o json submit "$WORK/training.yaml" >"$WORK/training.json"
grep -q '"priority": "training"' "$WORK/training.json" || fail "label training-priority should pick the class training: $(cat "$WORK/training.json")"
"$ALLOT" -o json submit "$WORK/training.yaml" --queue-name hyperpod-ns-team-b-localqueue --priority inference-priority >"$WORK/hyp.json"
grep -q '"team": "team-b"' "$WORK/hyp.json" && grep -q '"priority": "inference"' "$WORK/hyp.json" ||
  fail "--queue-name and --priority should override the manifest: $(cat "$WORK/hyp.json")"
# apply merges: a file with only a policy key keeps every priority class (it used to delete them all).
printf 'policy:\n  task_prioritization: fcfs\n' >"$WORK/policy-only.yaml"
"$ALLOT" apply "$WORK/policy-only.yaml" --dry-run >"$WORK/dry.out"
grep -q "~ policy.task_prioritization: task-ranking -> fcfs" "$WORK/dry.out" && grep -q "dry run" "$WORK/dry.out" ||
  fail "apply --dry-run should print the change: $(cat "$WORK/dry.out")"
"$ALLOT" policy get -o json >"$WORK/policy.json"
grep -q '"task_prioritization": "task-ranking"' "$WORK/policy.json" || fail "apply --dry-run changed the policy"
"$ALLOT" apply "$WORK/policy-only.yaml" >/dev/null
"$ALLOT" priority-class list >"$WORK/classes.out"
for c in inference training gold-priority; do
  grep -q "^$c " "$WORK/classes.out" || fail "apply of a policy-only file removed priority class $c: $(cat "$WORK/classes.out")"
done
"$ALLOT" apply "$WORK/teams.yaml" >"$WORK/reapply.out"
grep -q "~ policy.task_prioritization: fcfs -> task-ranking" "$WORK/reapply.out" || fail "re-apply: $(cat "$WORK/reapply.out")"
printf 'teams:\n  - name: team-a\n    allocation: [{instance_type: ml.g5.8xlarge, instances: 1}]\n    sharing: {strategy: LendAndBorrow, borrow_limit: 100}\n' >"$WORK/team-a.yaml"
"$ALLOT" cancel --team team-b >/dev/null  # a team with active jobs cannot be removed
"$ALLOT" apply "$WORK/team-a.yaml" --prune >"$WORK/prune.out"
grep -q -- "- team team-b (pruned: not in the file)" "$WORK/prune.out" || fail "apply --prune: $(cat "$WORK/prune.out")"
"$ALLOT" teams >"$WORK/teams.out"
grep -q "^team-b " "$WORK/teams.out" && fail "team-b is still there after apply --prune"
"$ALLOT" priority-class list >"$WORK/classes.out"
grep -q "^gold-priority " "$WORK/classes.out" || fail "apply --prune of a teams-only file must keep the classes"

# Job verbs: labels and selectors, hold and release, set priority, delete and submit --replace.
printf 'name: blocker\nteam: team-a\nlabels: {app: verbs}\nper_replica: {accelerators: 1}\ncommand: "sleep 60"\n' >"$WORK/blocker.yaml"
printf 'name: waiter\nteam: team-a\nlabels: {app: verbs, stage: second}\nper_replica: {accelerators: 1}\ncommand: "echo waited"\n' >"$WORK/waiter.yaml"
"$ALLOT" submit "$WORK/blocker.yaml" >/dev/null
wait_state blocker Running
"$ALLOT" submit "$WORK/waiter.yaml" >/dev/null
"$ALLOT" hold waiter >"$WORK/hold.out"
grep -q "^job waiter held: Pending" "$WORK/hold.out" || fail "hold: $(cat "$WORK/hold.out")"
"$ALLOT" jobs -l app=verbs >"$WORK/selected.out"
grep -q "^blocker " "$WORK/selected.out" && grep -q "^waiter .*Pending (held)" "$WORK/selected.out" || fail "jobs -l app=verbs: $(cat "$WORK/selected.out")"
"$ALLOT" jobs --selector 'app=verbs,stage!=second' >"$WORK/selected.out"
grep -q "^waiter " "$WORK/selected.out" && fail "jobs --selector stage!=second listed waiter: $(cat "$WORK/selected.out")"
# A held job of a higher class neither runs nor preempts.
"$ALLOT" set priority waiter inference-priority >"$WORK/prio.out"
grep -q "job waiter now has priority class inference" "$WORK/prio.out" || fail "set priority: $(cat "$WORK/prio.out")"
"$ALLOT" cancel blocker >/dev/null
wait_state blocker Cancelled
sleep 1
[ "$(job_field waiter state)" = Pending ] && [ "$(job_field waiter reason_code)" = held ] ||
  fail "a held job must wait on a free node: $(job_field waiter state), $(job_field waiter reason)"
"$ALLOT" release waiter >/dev/null
wait_state waiter Succeeded
expect_rc 2 "$ALLOT" hold waiter
grep -q "only a Pending or Suspended job can be held" "$WORK/last.err" || fail "hold of a finished job: $(cat "$WORK/last.err")"
# Deleting a finished job frees its name; the new job's log is its own.
"$ALLOT" delete waiter >"$WORK/delete.out"
grep -q "job waiter deleted" "$WORK/delete.out" || fail "delete: $(cat "$WORK/delete.out")"
expect_rc 2 "$ALLOT" describe waiter
"$ALLOT" submit "$WORK/waiter.yaml" >/dev/null
wait_state waiter Succeeded
[ "$("$ALLOT" logs waiter | grep -c '^waited')" = 1 ] || fail "the resubmitted job's log should be its own: $("$ALLOT" logs waiter)"
"$ALLOT" submit --replace "$WORK/waiter.yaml" >"$WORK/replace.out" 2>&1
grep -q "job waiter submitted" "$WORK/replace.out" || fail "submit --replace: $(cat "$WORK/replace.out")"
wait_state waiter Succeeded
# cancel --selector: only the jobs that match.
for j in sel-1 sel-2; do
  printf 'name: %s\nteam: team-a\nlabels: {batch: nightly}\nper_replica: {accelerators: 8}\ncommand: "true"\n' "$j" >"$WORK/$j.yaml"
  "$ALLOT" submit "$WORK/$j.yaml" >/dev/null 2>&1
done
"$ALLOT" cancel --selector batch=nightly >"$WORK/cancel-sel.out"
grep -q "^job sel-1: Cancelled" "$WORK/cancel-sel.out" && grep -q "^job sel-2: Cancelled" "$WORK/cancel-sel.out" ||
  fail "cancel --selector: $(cat "$WORK/cancel-sel.out")"
grep -q "kueue-sample" "$WORK/cancel-sel.out" && fail "cancel --selector cancelled a job without the label"
# Teams per instance type, with the fair share; describe team.
"$ALLOT" teams >"$WORK/teams-types.out"
grep -q "^team-a .*ml.g5.8xlarge  *1/32/128 " "$WORK/teams-types.out" && head -n1 "$WORK/teams-types.out" | grep_q "SHARE" ||
  fail "teams should have a row per instance type and a share column: $(cat "$WORK/teams-types.out")"
"$ALLOT" describe team team-a >"$WORK/team.out"
grep -q "^Name: *team-a" "$WORK/team.out" && grep -q "^Fair share:" "$WORK/team.out" && grep -q "^  ml.g5.8xlarge " "$WORK/team.out" ||
  fail "describe team: $(cat "$WORK/team.out")"
# kubectl's words (docs/cli.md): get, -o=json, -o name, --no-headers, describe KIND/NAME, delete job NAME, -f FILE.
"$ALLOT" get jobs >"$WORK/get.out" || fail "get jobs: $(cat "$WORK/get.out")"
grep -q "^waiter " "$WORK/get.out" && head -n1 "$WORK/get.out" | grep_q "^NAME" || fail "get jobs should be the jobs table: $(cat "$WORK/get.out")"
"$ALLOT" get nodes >"$WORK/get-nodes.out" && grep -q "^gpu-1 " "$WORK/get-nodes.out" || fail "get nodes: $(cat "$WORK/get-nodes.out")"
"$ALLOT" get teams >"$WORK/get-teams.out" && grep -q "^team-a " "$WORK/get-teams.out" || fail "get teams: $(cat "$WORK/get-teams.out")"
expect_rc 2 "$ALLOT" get pods
grep -q "unknown command 'get'" "$WORK/last.err" || fail "get pods: $(cat "$WORK/last.err")"
"$ALLOT" jobs -o=json >"$WORK/eq.json" && grep -q '"name": "waiter"' "$WORK/eq.json" || fail "-o=json: $(cat "$WORK/eq.json")"
"$ALLOT" get jobs -o name --state succeeded >"$WORK/names.out"
grep -qx "waiter" "$WORK/names.out" && ! grep -q " " "$WORK/names.out" || fail "-o name: one bare name a line: $(cat "$WORK/names.out")"
"$ALLOT" jobs --no-headers >"$WORK/noheaders.out"
grep -q "^NAME" "$WORK/noheaders.out" && fail "--no-headers printed the header: $(cat "$WORK/noheaders.out")"
grep -q "^waiter " "$WORK/noheaders.out" || fail "--no-headers lost the rows: $(cat "$WORK/noheaders.out")"
for form in jobs/waiter job/waiter "jobs waiter"; do
  # shellcheck disable=SC2086
  "$ALLOT" describe $form >"$WORK/describe-form.out" || fail "describe $form failed"
  grep -q "^Name: *waiter" "$WORK/describe-form.out" || fail "describe $form: $(cat "$WORK/describe-form.out")"
done
"$ALLOT" get job waiter >"$WORK/get-job.out" && grep -q "^Name: *waiter" "$WORK/get-job.out" || fail "get job waiter: $(cat "$WORK/get-job.out")"
"$ALLOT" describe node/gpu-1 >"$WORK/describe-node.out" || fail "describe node/gpu-1: $(cat "$WORK/describe-node.out")"
# --queue-name on a manifest without a queue label or namespace; the label shows in describe. submit -f.
cat >"$WORK/bare.yaml" <<'YAML'
apiVersion: sagemaker.amazonaws.com/v1
kind: HyperPodPytorchJob
metadata:
  name: bare
spec:
  nprocPerNode: "1"
  replicaSpecs:
    - name: pods
      replicas: 1
      template:
        spec:
          containers:
            - {name: main, image: busybox, command: ["true"], resources: {limits: {nvidia.com/gpu: "1"}}}
YAML
expect_rc 2 "$ALLOT" submit -f "$WORK/bare.yaml"
grep -q "cannot tell the team" "$WORK/last.err" || fail "a manifest without team: $(cat "$WORK/last.err")"
"$ALLOT" submit -f "$WORK/bare.yaml" --queue-name hyperpod-ns-team-a-localqueue >"$WORK/bare.out" 2>&1 ||
  fail "submit -f with --queue-name: $(cat "$WORK/bare.out")"
grep -q "job bare submitted to team team-a" "$WORK/bare.out" || fail "--queue-name should name the team: $(cat "$WORK/bare.out")"
"$ALLOT" describe job/bare >"$WORK/bare-describe.out"
grep -q "kueue.x-k8s.io/queue-name=hyperpod-ns-team-a-localqueue" "$WORK/bare-describe.out" ||
  fail "describe should show the queue label --queue-name set: $(cat "$WORK/bare-describe.out")"
# Its image is honoured: where no registry is reachable (as here) busybox cannot be pulled and the run fails with
# reason `image pull`; where one is, it runs `true` and succeeds.
bare_state=""
for _ in $(seq 1 600); do
  bare_state=$(job_field bare state 2>/dev/null || true)
  case $bare_state in Succeeded|Failed) break ;; esac
  sleep 0.1
done
case $bare_state in
  Succeeded) ;;
  Failed) job_field bare reason | grep_q "image pull: busybox" || fail "bare failed for another reason: $(job_field bare reason)" ;;
  *) fail "bare did not end within 60 s: '$bare_state'" ;;
esac
# delete job NAME deletes NAME (it used to look for a job named "job"); delete -f FILE the file's jobs.
"$ALLOT" delete job bare >"$WORK/delete-job.out" 2>&1 || fail "delete job bare: $(cat "$WORK/delete-job.out")"
grep -q "job bare deleted" "$WORK/delete-job.out" || fail "delete job bare: $(cat "$WORK/delete-job.out")"
"$ALLOT" delete -f "$WORK/waiter.yaml" >"$WORK/delete-f.out" 2>&1 || fail "delete -f: $(cat "$WORK/delete-f.out")"
grep -q "job waiter deleted" "$WORK/delete-f.out" || fail "delete -f: $(cat "$WORK/delete-f.out")"
expect_rc 2 "$ALLOT" describe waiter
"$ALLOT" apply -f "$WORK/teams.yaml" >/dev/null || fail "apply -f"
# Instance types: ml.c5.4xlarge is built in now; the policy file's type joins with --instance-types on both sides,
# and an agent without the file names the type it does not know.
# AGENT_EXEC=exec in the background: the job is then the agent itself, so the cleanup's kill of its pid reaches it
# (a function run with & is a subshell, and killing the subshell left its agent running after the test).
agent_line() { ${AGENT_EXEC:-} "$ALLOT" agent --server "$ALLOT_SERVER" --name "$1" --instance-type "$2" --work-dir "$WORK/agents/$1" \
  --token-file "$WORK/join-token" --heartbeat-interval 0.2 --stop-grace 1 $AGENT_USER_FLAGS "${@:3}"; }
expect_rc 2 agent_line lab-0 ml.lab.cpu16
grep -q "unknown instance type 'ml.lab.cpu16'" "$WORK/last.err" || fail "an unknown type at agent start: $(cat "$WORK/last.err")"
for n in cpu-1:ml.c5.4xlarge lab-1:ml.lab.cpu16; do
  AGENT_EXEC=exec agent_line "${n%%:*}" "${n#*:}" --instance-types "$WORK/types.yaml" >>"$WORK/agent-${n%%:*}.log" 2>&1 &
  PIDS+=($!)
done
for _ in $(seq 1 100); do
  "$ALLOT" nodes >"$WORK/typed-nodes.out" 2>/dev/null
  grep -q "^cpu-1 .*ml.c5.4xlarge.*Schedulable" "$WORK/typed-nodes.out" && grep -q "^lab-1 .*ml.lab.cpu16.*Schedulable" "$WORK/typed-nodes.out" && break
  sleep 0.1
done
grep -q "^cpu-1 .*ml.c5.4xlarge.*Schedulable" "$WORK/typed-nodes.out" && grep -q "^lab-1 .*ml.lab.cpu16.*Schedulable" "$WORK/typed-nodes.out" ||
  fail "agents of ml.c5.4xlarge and of the policy file's type should join: $(cat "$WORK/typed-nodes.out"; tail -n 3 "$WORK"/agent-cpu-1.log "$WORK"/agent-lab-1.log)"
# A team's default request (issue 28 item 11): a pod set that asks for nothing gets it; without one, the refusal
# names the setting.
cat "$WORK/types.yaml" - >"$WORK/lab-team.yaml" <<'YAML'
teams:
  - name: lab
    allocation:
      - {instance_type: ml.c5.4xlarge, instances: 1}
      - {instance_type: ml.lab.cpu16, instances: 1}
    default_request: {vcpu: 1}
YAML
"$ALLOT" apply "$WORK/lab-team.yaml" >/dev/null || fail "apply of a team with default_request"
"$ALLOT" describe team lab >"$WORK/lab-team.out"
grep -q "^Default req.: vcpu 1 (rest in proportion)" "$WORK/lab-team.out" || fail "describe team should show the default request: $(cat "$WORK/lab-team.out")"
printf 'name: no-request\nteam: team-a\ncommand: "true"\n' >"$WORK/no-request.yaml"
expect_rc 2 "$ALLOT" submit "$WORK/no-request.yaml"
grep -q "team team-a has no default_request" "$WORK/last.err" || fail "a job without request for a team without default: $(cat "$WORK/last.err")"
# describe (item 14): every pod set's request, the retries; placement ranks 0..N-1 over the job, as RANK; and
# completion_index gives JOB_COMPLETION_INDEX.
cat >"$WORK/ranks.yaml" <<'YAML'
name: ranks
team: lab
max_retries: 2
completion_index: true
command: 'echo "rank=$RANK index=$JOB_COMPLETION_INDEX"; sleep 3'
pod_sets:
  - {name: head, replicas: 1, per_replica: {vcpu: 2}, instance_type: ml.c5.4xlarge}
  - {name: rest, replicas: 1, instance_type: ml.lab.cpu16}
YAML
"$ALLOT" submit "$WORK/ranks.yaml" >/dev/null || fail "submit ranks"
wait_state ranks Running
"$ALLOT" describe ranks >"$WORK/ranks.out"
grep -q "^  1  *lab-1 " "$WORK/ranks.out" || fail "the rest pod set's replica is rank 1, as its RANK: $(cat "$WORK/ranks.out")"
log_has ranks "rank=0 index=0"
log_has ranks "rank=1 index=1"
wait_state ranks Succeeded
"$ALLOT" describe ranks >"$WORK/ranks.out"
grep -q "^Retries: *0 of 2 used (max_retries 2)" "$WORK/ranks.out" && grep -q "PER_REPLICA" "$WORK/ranks.out" &&
  grep -q "^  rest .*ml.lab.cpu16 .*vcpu 1 (rest in proportion)" "$WORK/ranks.out" ||
  fail "describe should show each pod set's request and the retries: $(cat "$WORK/ranks.out")"
"$ALLOT" describe ranks -o json | tr -d ' \n' >"$WORK/ranks.json"
grep -q '"max_retries":2' "$WORK/ranks.json" && grep -q '"retries_used":0' "$WORK/ranks.json" &&
  grep -q '"per_replica":{"vcpu":1}' "$WORK/ranks.json" || fail "describe -o json: $(cat "$WORK/ranks.json")"
# Types the server knows from its --instance-types file and the client's built-in catalog lacks: allocation set
# and nodes apply leave the check to the server, apply checks a teams file against the server's types (no
# instance_types section in the file); a type neither knows is refused naming it and where the list comes from.
expect_rc 0 "$ALLOT" allocation set lab --instance-type ml.lab.cpu16 --instances 2
"$ALLOT" allocation get lab >"$WORK/lab-alloc.out"
grep -q "^ml.lab.cpu16  *2 " "$WORK/lab-alloc.out" || fail "allocation set of the server's type: $(cat "$WORK/lab-alloc.out")"
expect_rc 2 "$ALLOT" allocation set lab --instance-type ml.lab.nope --instances 1
grep -q "'ml.lab.nope' is not a known instance type" "$WORK/last.err" &&
  grep -q "known types (built in, and the instance_types of $WORK/types.yaml (--instance-types)): .*ml.lab.cpu16" "$WORK/last.err" ||
  fail "allocation set of an unknown type: $(cat "$WORK/last.err")"
printf 'nodes:\n  - {name: static-lab, instance_type: ml.lab.cpu16}\n' >"$WORK/nodes-lab.yaml"
expect_rc 0 "$ALLOT" nodes apply "$WORK/nodes-lab.yaml"
grep -q "^static-lab .*ml.lab.cpu16" "$WORK/last.out" || fail "nodes apply of the server's type: $(cat "$WORK/last.out")"
expect_rc 0 "$ALLOT" node delete static-lab
printf 'nodes:\n  - {name: static-nope, instance_type: ml.lab.nope}\n' >"$WORK/nodes-nope.yaml"
expect_rc 2 "$ALLOT" nodes apply "$WORK/nodes-nope.yaml"
grep -q "'ml.lab.nope' is not a known instance type; known types (built in, and the instance_types of " "$WORK/last.err" ||
  fail "nodes apply of an unknown type: $(cat "$WORK/last.err")"
printf 'teams:\n  - name: lab2\n    allocation:\n      - {instance_type: ml.lab.cpu16, instances: 1}\n' >"$WORK/lab2.yaml"
expect_rc 0 "$ALLOT" apply "$WORK/lab2.yaml"
"$ALLOT" allocation get lab2 >"$WORK/lab2-alloc.out"
grep -q "^ml.lab.cpu16  *1 " "$WORK/lab2-alloc.out" || fail "apply of a team of the server's type: $(cat "$WORK/lab2-alloc.out")"
sed 's/ml.lab.cpu16/ml.lab.nope/' "$WORK/lab2.yaml" >"$WORK/lab2-nope.yaml"
expect_rc 2 "$ALLOT" apply "$WORK/lab2-nope.yaml"
grep -q "lab2-nope.yaml:4: .*'ml.lab.nope' is not a known instance type; known types (the server's: built in, and its --instance-types file's): .*ml.lab.cpu16" "$WORK/last.err" ||
  fail "apply of a team of an unknown type: $(cat "$WORK/last.err")"
# submit --dry-run asks the server (item 13): the same answer and exit code, nothing submitted; a file of several
# jobs is all or nothing.
printf 'name: dry-1\nteam: lab\ncommand: "true"\n---\nname: dry-2\nteam: lab\ncommand: "true"\n' >"$WORK/dry.yaml"
expect_rc 0 "$ALLOT" submit --dry-run "$WORK/dry.yaml"
grep -q "^job dry-1 submitted to team lab: Pending .*(server dry run: nothing submitted)" "$WORK/last.out" &&
  grep -q "^job dry-2 submitted to team lab" "$WORK/last.out" || fail "submit --dry-run: $(cat "$WORK/last.out")"
expect_rc 2 "$ALLOT" describe dry-1
printf 'name: dry-3\nteam: lab\ncommand: "true"\n---\nname: dry-4\nteam: nobody\ncommand: "true"\n' >"$WORK/dry-bad.yaml"
set +e
"$ALLOT" submit --dry-run "$WORK/dry-bad.yaml" >/dev/null 2>"$WORK/dry-bad.err"; dry_rc=$?
"$ALLOT" submit "$WORK/dry-bad.yaml" >/dev/null 2>"$WORK/real-bad.err"; real_rc=$?
set -e
[ "$dry_rc" = "$real_rc" ] && [ "$real_rc" != 0 ] && diff -q "$WORK/dry-bad.err" "$WORK/real-bad.err" >/dev/null ||
  fail "a dry run should fail as the submission does: rc $dry_rc vs $real_rc: $(cat "$WORK/dry-bad.err" "$WORK/real-bad.err")"
grep -q "unknown team 'nobody'" "$WORK/real-bad.err" || fail "the refusal should name the team: $(cat "$WORK/real-bad.err")"
expect_rc 2 "$ALLOT" describe dry-3
"$ALLOT" submit "$WORK/dry.yaml" >"$WORK/dry-real.out" || fail "submit of two jobs: $(cat "$WORK/dry-real.out")"
[ "$(grep -c "^job dry-[12] submitted to team lab" "$WORK/dry-real.out")" = 2 ] || fail "one line per job: $(cat "$WORK/dry-real.out")"
# An array is submitted as one line that says so (not "job NAME"), with its tasks counted.
printf 'name: sweep\nteam: lab\narray: {count: 3, parallel: 2}\ncommand: "true"\n' >"$WORK/sweep.yaml"
expect_rc 0 "$ALLOT" submit --dry-run "$WORK/sweep.yaml"
grep -q "^array sweep of 3 tasks (at most 2 running) submitted to team lab: 3 pending (server dry run: nothing submitted)" "$WORK/last.out" ||
  fail "submit --dry-run of an array: $(cat "$WORK/last.out")"
# The completion script follows the definitions: -f and --no-headers are offered.
"$ALLOT" completion bash >"$WORK/completion.bash"
words allot submit --file | grep_q -w -- "--filename" || fail "completion of 'submit --file': '$(words allot submit --file)'"
words allot jobs --no | grep_q -w -- "--no-headers" || fail "completion of 'jobs --no': '$(words allot jobs --no)'"
# Cohort trees (docs/cli.md): groups applied with a team in one; `allot teams` shows the tree, -o json each team's group.
printf 'policy:\n  groups:\n    - {name: org}\n    - {name: research, parent: org}\nteams:\n  - {name: tree-a, group: research, fair_share_weight: 1, allocation: [{instance_type: ml.g5.8xlarge, instances: 1}]}\n' >"$WORK/tree.yaml"
"$ALLOT" apply "$WORK/tree.yaml" >"$WORK/tree-apply.out" 2>&1 || fail "apply of groups: $(cat "$WORK/tree-apply.out")"
"$ALLOT" teams >"$WORK/tree-teams.out"
grep -q "^org/ " "$WORK/tree-teams.out" && grep -q "^  research/ " "$WORK/tree-teams.out" && grep -q "^    tree-a " "$WORK/tree-teams.out" &&
  grep -q "^team-a " "$WORK/tree-teams.out" || fail "teams should show the tree: $(cat "$WORK/tree-teams.out")"
"$ALLOT" teams -o json >"$WORK/tree-teams.json"
grep -q '"group": *"research"' "$WORK/tree-teams.json" || fail "teams -o json should carry each team's group: $(cat "$WORK/tree-teams.json")"
say PASS
