#!/usr/bin/env bash
# End to end: EC2 topology on live nodes (docs/topology.md, "Live nodes"). Agents start with --instance-id and
# --ec2-topology and join with their own layers; `allot topology apply FILE` moves nodes to other network nodes
# while a job runs on them (it stays where it is; the next job is placed by the new layers); topology.conf and the
# Mermaid chart from the live server show the change; a node whose agent is down takes its layers and keeps them
# when it comes back; bad input and a member's token change nothing; the server killed with -9 after the apply was
# answered comes back with the layers.
# Usage: topology_apply_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=topology_apply
source "$(dirname "$0")/lib_e2e.sh"

# instance JSON: one describe-instance-topology entry (type g5.8xlarge, 3 layers).
inst() { printf '{"InstanceId": "%s", "InstanceType": "g5.8xlarge", "NetworkNodes": ["nn-1", "nn-2", "%s"], "AvailabilityZone": "us-east-1a"}' "$1" "$2"; }
cat >"$WORK/start.json" <<JSON
{"Instances": [$(inst i-0g1 nn-3a), $(inst i-0g2 nn-3a), $(inst i-0g3 nn-3b), $(inst i-0g4 nn-3c)]}
JSON
# The change: gpu-1 moves to nn-3b beside gpu-3, gpu-4 to nn-3d; i-0gone is no node of this cluster.
cat >"$WORK/moved.json" <<JSON
{"Instances": [$(inst i-0g1 nn-3b), $(inst i-0g2 nn-3a), $(inst i-0g3 nn-3b), $(inst i-0g4 nn-3d), $(inst i-0gone nn-3x)]}
JSON

# layer3 NODE: the node's network-node-layer-3 label as the server has it.
layer3() {
  "$ALLOT" nodes -o json | python3 -c '
import json, sys
for n in json.load(sys.stdin):
    if n["name"] == sys.argv[1]:
        print(n.get("labels", {}).get("topology.k8s.aws/network-node-layer-3", ""))' "$1"
}
nodes_of() { job_json "$1" | grep -o '"node": *"[^"]*"' | sed 's/.*"\([^"]*\)"$/\1/' | sort -u | tr '\n' ' '; }

start_server --snapshot-every 3 --snapshot-min-records 0
for i in 1 2 3 4; do start_agent "gpu-$i" "" --instance-id "i-0g$i" --ec2-topology "$WORK/start.json"; done
write_teams
for i in 1 2 3 4; do
  want=$(case $i in 1|2) echo nn-3a;; 3) echo nn-3b;; 4) echo nn-3c;; esac)
  [ "$(layer3 gpu-$i)" = "$want" ] || fail "gpu-$i joined with layer 3 '$(layer3 gpu-$i)', not $want from --ec2-topology"
done
say "agents joined with their own layers"

# An agent whose file has no entry for it warns and joins without layers from it; one whose file is not EC2
# output does not start.
echo '{"Instances": []}' >"$WORK/empty.json"
expect_rc 2 "$ALLOT" agent --server "$ALLOT_SERVER" --name bad-1 --instance-type ml.g5.8xlarge --instance-id i-0b1 \
  --ec2-topology "$WORK/empty.json" --work-dir "$WORK/agents/bad-1" --token-file "$WORK/join-token" $AGENT_USER_FLAGS
grep_q 'Instances.* is empty' "$WORK/last.err" || fail "a bad --ec2-topology file should be named: $(cat "$WORK/last.err")"
"$ALLOT" nodes | grep_q "^bad-1 " && fail "an agent with a bad --ec2-topology file joined"

cat >"$WORK/steady.yaml" <<YAML
name: steady
team: team-a
replicas: 2
per_replica: {accelerators: 1}
topology: {required: network-node-layer-3}
command: '$NODE_PID > $WORK/pids/steady-\$RANK; sleep 300'
YAML
"$ALLOT" submit "$WORK/steady.yaml" >/dev/null
wait_state steady Running 30
before=$(nodes_of steady)
[ "$before" = "gpu-1 gpu-2 " ] || fail "steady should run in nn-3a (gpu-1, gpu-2), runs on: $before"

# Bad input changes nothing: a file that is not EC2 output (exit 2, nothing sent), a member's token (refused).
echo '{"Instances": [{"InstanceId": "i-0g1", "InstanceType": "g5.8xlarge", "NetworkNodes": ["a", "b"], "AvailabilityZone": "z"}]}' >"$WORK/bad.json"
expect_rc 2 "$ALLOT" topology apply "$WORK/bad.json"
grep_q 'Instances\[0\] (i-0g1): NetworkNodes: network layers: 2 given' "$WORK/last.err" || fail "bad file: $(cat "$WORK/last.err")"
member=$("$ALLOT" token create --role member --team team-a 2>/dev/null) || fail "token create member"
expect_rc 2 env ALLOT_TOKEN="$member" "$ALLOT" topology apply "$WORK/moved.json"
grep_q "admin" "$WORK/last.err" || fail "a member's apply should be refused, naming the admin role: $(cat "$WORK/last.err")"
expect_rc 2 "$ALLOT" topology apply <(echo "{\"Instances\": [$(inst i-0nobody nn-3a)]}")
grep_q "none of the 1 instance ids" "$WORK/last.err" || fail "an apply matching no node: $(cat "$WORK/last.err")"
[ "$(layer3 gpu-1)" = nn-3a ] || fail "a refused apply changed gpu-1's layers"

# gpu-4's agent is down during the apply (killed; the server may not have timed it out yet: it is a node all the same).
kill -9 "$AGENT_PID_gpu_4"
wait "$AGENT_PID_gpu_4" 2>/dev/null || true

"$ALLOT" topology apply "$WORK/moved.json" >"$WORK/apply.out" 2>"$WORK/apply.err" || fail "apply: $(cat "$WORK/apply.err")"
grep_q "^gpu-1 .*i-0g1 .*nn-1/nn-2/nn-3b .*yes" "$WORK/apply.out" || fail "apply's table: $(cat "$WORK/apply.out")"
grep_q "^gpu-2 .*no$" "$WORK/apply.out" || fail "gpu-2's layers did not change: $(cat "$WORK/apply.out")"
grep_q "instance i-0gone is not a node in the cluster" "$WORK/apply.err" || fail "unknown ids are reported: $(cat "$WORK/apply.err")"
grep_q "2 of 4 matched nodes changed; 1 instances unknown" "$WORK/apply.err" || fail "apply's count: $(cat "$WORK/apply.err")"
[ "$(layer3 gpu-1)" = nn-3b ] && [ "$(layer3 gpu-4)" = nn-3d ] || fail "after apply: gpu-1 $(layer3 gpu-1), gpu-4 $(layer3 gpu-4)"
"$ALLOT" events 2>/dev/null | grep_q "network layers set on 2 nodes" || say "(events listing did not show the apply's event)"
say "applied"

# The running job stays where it was, unrestarted.
[ "$(job_field steady state)" = Running ] && [ "$(job_field steady restarts)" = 0 ] && [ "$(nodes_of steady)" = "$before" ] ||
  fail "steady moved or restarted: $(job_field steady state) on $(nodes_of steady), restarts $(job_field steady restarts)"

# Generated files from the live server show the new layers.
"$ALLOT" topology slurm-conf --plugin tree >"$WORK/topology.conf" || fail "slurm-conf"
grep_q "nn-3b.*gpu-\[1,3\]\|nn-3b.*gpu-1,gpu-3" "$WORK/topology.conf" || fail "topology.conf does not put gpu-1 under nn-3b: $(cat "$WORK/topology.conf")"
"$ALLOT" topology mermaid >"$WORK/chart.mmd" || fail "mermaid"
grep_q "nn-3d" "$WORK/chart.mmd" || fail "the Mermaid chart lacks nn-3d: $(cat "$WORK/chart.mmd")"

# The next job is placed by the new layers: gpu-1 and gpu-3 share nn-3b now.
"$ALLOT" cancel steady >/dev/null
wait_state steady Cancelled 30
sed -e 's/^name: steady/name: pair/' -e 's/steady-/pair-/' "$WORK/steady.yaml" >"$WORK/pair.yaml"
"$ALLOT" submit "$WORK/pair.yaml" >/dev/null
wait_state pair Running 30
[ "$(nodes_of pair)" = "gpu-1 gpu-3 " ] || fail "pair should run in the new nn-3b (gpu-1, gpu-3), runs on: $(nodes_of pair)"

# gpu-4's agent comes back (without --ec2-topology): its node keeps the layers the apply gave it.
start_agent gpu-4 "" --instance-id i-0g4
[ "$(layer3 gpu-4)" = nn-3d ] || fail "gpu-4 lost its applied layers when its agent came back: $(layer3 gpu-4)"

# The server killed with -9 after the apply was answered: the layers survive (journal and snapshots).
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
start_server --snapshot-every 3 --snapshot-min-records 0
[ "$(layer3 gpu-1)" = nn-3b ] && [ "$(layer3 gpu-4)" = nn-3d ] && [ "$(layer3 gpu-2)" = nn-3a ] ||
  fail "after kill -9: gpu-1 $(layer3 gpu-1), gpu-2 $(layer3 gpu-2), gpu-4 $(layer3 gpu-4)"
say PASS
