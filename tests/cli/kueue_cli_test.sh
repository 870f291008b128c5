#!/usr/bin/env bash
# `allot export kueue` and `allot import kueue` through the binary: export, import, export again gives the same
# objects; the imported teams file is one `allot sim run` accepts in place of the scenario's own sections;
# what does not map is a warning on stderr naming object and field, and the command succeeds; bad input exits 2.
set -euo pipefail
ALLOT=$1
SRC=$2
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

scenario=$SRC/tests/scenarios/two_team_walkthrough.yaml
"$ALLOT" export kueue "$scenario" --levels network-node-layer-3,hostname > "$WORK/kueue.yaml"
grep -q '^kind: ClusterQueue' "$WORK/kueue.yaml" || fail "no ClusterQueue in the export"
grep -q 'nodeLabel: topology.k8s.aws/network-node-layer-3' "$WORK/kueue.yaml" || fail "--levels not used: $(cat "$WORK/kueue.yaml")"
"$ALLOT" import kueue "$WORK/kueue.yaml" > "$WORK/teams.yaml" 2> "$WORK/import.err"
[ ! -s "$WORK/import.err" ] || fail "import of an export warned: $(cat "$WORK/import.err")"
"$ALLOT" export kueue "$WORK/teams.yaml" --levels network-node-layer-3,hostname > "$WORK/again.yaml"
diff "$WORK/kueue.yaml" "$WORK/again.yaml" > "$WORK/diff" || fail "export(import(export)) differs: $(cat "$WORK/diff")"

# The imported sections replace the scenario's own: the scenario still passes.
# Top-level sections start in column 0: drop the scenario's policy and teams, append the imported ones.
awk '/^[^ #-]/ { skip = ($1 == "policy:" || $1 == "teams:") } !skip' "$scenario" > "$WORK/replaced.yaml"
cat "$WORK/teams.yaml" >> "$WORK/replaced.yaml"
"$ALLOT" sim run "$WORK/replaced.yaml" > "$WORK/sim.out" || fail "the scenario with imported teams failed: $(cat "$WORK/sim.out")"

# Both API versions: v1beta2 by default (cohortName), v1beta1 on request (cohort); each comes back the same.
for v in v1beta2 v1beta1; do
  "$ALLOT" export kueue "$scenario" --api-version "$v" > "$WORK/$v.yaml"
  grep -q "^apiVersion: kueue.x-k8s.io/$v$" "$WORK/$v.yaml" || fail "--api-version $v: $(head -n 3 "$WORK/$v.yaml")"
  "$ALLOT" import kueue "$WORK/$v.yaml" > "$WORK/$v-teams.yaml" 2> "$WORK/$v.err"
  [ ! -s "$WORK/$v.err" ] || fail "import of a $v export warned: $(cat "$WORK/$v.err")"
  cmp -s "$WORK/teams.yaml" "$WORK/$v-teams.yaml" || fail "$v: import differs: $(diff "$WORK/teams.yaml" "$WORK/$v-teams.yaml")"
done
grep -q "cohortName: allot" "$WORK/v1beta2.yaml" && grep -q "cohort: allot" "$WORK/v1beta1.yaml" ||
  fail "v1beta2 says cohortName, v1beta1 cohort"

# HyperPod's objects as written (v1beta2, GPU-only queues, values 1000/750/500): the cohort is read, vCPU is
# unlimited, and a job asking for more vCPU than its GPUs' share runs under the imported teams.
"$ALLOT" import kueue "$SRC/tests/data/kueue/hyperpod-v1beta2.yaml" > "$WORK/hp.yaml" 2> "$WORK/hp.err" || fail "import of HyperPod objects"
grep -q "spec.flavorFungibility" "$WORK/hp.err" && grep -q "spec.admissionScope" "$WORK/hp.err" ||
  fail "unread fields should be warned about: $(cat "$WORK/hp.err")"
grep -q "spec.cohortName: empty" "$WORK/hp.err" && fail "cohortName was not read: $(cat "$WORK/hp.err")"
grep -q "vcpu: unlimited" "$WORK/hp.yaml" || fail "GPU-only queues should leave vCPU unlimited: $(cat "$WORK/hp.yaml")"
{
  echo "name: imported HyperPod teams"
  echo "cluster:"
  echo "  nodes:"
  echo "    - {name: p5-[1-4], instance_type: ml.p5.48xlarge}"
  cat "$WORK/hp.yaml"
  cat <<'YAML'
events:
  - at: 0
    submit: {name: cpu-heavy, team: research, priority: inference, instance_type: ml.p5.48xlarge,
             per_replica: {accelerators: 1, vcpu: 32}}
  - at: 0
    expect:
      jobs:
        cpu-heavy: {state: Running}
YAML
} > "$WORK/hp-scenario.yaml"
"$ALLOT" sim run "$WORK/hp-scenario.yaml" > "$WORK/hp-sim.out" || fail "a job of an imported GPU-only team should run: $(cat "$WORK/hp-sim.out")"

cat > "$WORK/foreign.yaml" <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: hyperpod-ns-nlp-clusterqueue}
spec:
  cohort: shared
  queueingStrategy: StrictFIFO
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: ml.p5.48xlarge
      resources: [{name: nvidia.com/gpu, nominalQuota: 16, borrowingLimit: 8}]
YAML
"$ALLOT" import kueue "$WORK/foreign.yaml" > "$WORK/nlp.yaml" 2> "$WORK/nlp.err" || fail "import with warnings should succeed"
grep -q "allot import kueue: warning: ClusterQueue hyperpod-ns-nlp-clusterqueue: spec.queueingStrategy: StrictFIFO" "$WORK/nlp.err" ||
  fail "no warning naming the object and field: $(cat "$WORK/nlp.err")"
grep -q "name: nlp" "$WORK/nlp.yaml" || fail "team nlp missing: $(cat "$WORK/nlp.yaml")"
grep -q "borrow_limit: 50" "$WORK/nlp.yaml" || fail "8 of 16 should borrow 50%: $(cat "$WORK/nlp.yaml")"

# Cohort trees travel as Cohorts with parentName: export, import, export again gives the same objects, and the
# scenario run with the imported groups and teams in place of its own still meets every expectation (lending
# two levels deep, a group's borrowing limit, reclaim across groups: worked by hand in docs/scheduling.md).
for tree in "$SRC"/tests/scenarios/cohort_tree_*.yaml; do
  "$ALLOT" export kueue "$tree" --levels hostname > "$WORK/tree.yaml" 2> "$WORK/tree-export.err"
  [ ! -s "$WORK/tree-export.err" ] || fail "export of a cohort tree warned: $(cat "$WORK/tree-export.err")"
  grep -q "parentName: allot" "$WORK/tree.yaml" || fail "no Cohort under the cluster's: $(cat "$WORK/tree.yaml")"
  "$ALLOT" import kueue "$WORK/tree.yaml" > "$WORK/tree-teams.yaml" 2> "$WORK/tree-import.err"
  [ ! -s "$WORK/tree-import.err" ] || fail "import of a cohort tree warned: $(cat "$WORK/tree-import.err")"
  grep -q "groups:" "$WORK/tree-teams.yaml" || fail "no groups imported: $(cat "$WORK/tree-teams.yaml")"
  "$ALLOT" export kueue "$WORK/tree-teams.yaml" --levels hostname > "$WORK/tree-again.yaml"
  diff "$WORK/tree.yaml" "$WORK/tree-again.yaml" > "$WORK/tree.diff" || fail "$tree: export(import(export)) differs: $(cat "$WORK/tree.diff")"
  awk '/^[^ #-]/ { skip = ($1 == "policy:" || $1 == "teams:") } !skip' "$tree" > "$WORK/tree-replaced.yaml"
  cat "$WORK/tree-teams.yaml" >> "$WORK/tree-replaced.yaml"
  "$ALLOT" sim run "$WORK/tree-replaced.yaml" > "$WORK/tree-sim.out" ||
    fail "$tree with imported groups failed: $(cat "$WORK/tree-sim.out")"
done
# Parents that form a cycle are refused (exit 2), naming the Cohort; nothing is printed.
cat > "$WORK/cycle.yaml" <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: east}
spec: {parentName: west}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: west}
spec: {parentName: east}
YAML
set +e
"$ALLOT" import kueue "$WORK/cycle.yaml" > "$WORK/cycle.out" 2> "$WORK/cycle.err"; rc=$?
set -e
[ "$rc" = 2 ] || fail "a cycle of Cohorts should exit 2, not $rc"
grep -q "Cohort east: spec.parentName: the Cohorts' parents form a cycle: east > west > east" "$WORK/cycle.err" ||
  fail "the error should name the cohorts: $(cat "$WORK/cycle.err")"
[ ! -s "$WORK/cycle.out" ] || fail "a refused import printed a teams file: $(cat "$WORK/cycle.out")"

set +e
"$ALLOT" import kueue "$WORK/none.yaml" 2> "$WORK/missing.err"; rc=$?
set -e
[ "$rc" = 2 ] || fail "a missing file should exit 2, not $rc"
printf 'teams:\n  - name: Bad_Team\n' > "$WORK/bad.yaml"
set +e
"$ALLOT" export kueue "$WORK/bad.yaml" 2> "$WORK/bad.err"; rc=$?
set -e
[ "$rc" = 2 ] || fail "an invalid teams file should exit 2, not $rc"
grep -q "Bad_Team" "$WORK/bad.err" || fail "the error should name the bad team: $(cat "$WORK/bad.err")"
echo "kueue cli: ok"
