#!/usr/bin/env bash
# A provisioner for emulated clusters (development, tests, `allot demo`): `allot server --provisioner
# scripts/provision-emulated.sh` runs it when a node needs replacing, and it starts a new emulated agent of the
# same instance type with the same topology labels, which registers with `--replaces` and so retires the failed
# node. docs/resiliency.md shows what an EC2 or HyperPod provisioner does instead. When a capacity plan starts
# (ALLOT_PLAN set, docs/plans.md) it starts the plan's node ALLOT_REPLACEMENT_NAME with `--plan` instead.
#
# From the server (see src/server/outside/provisioner.h): ALLOT_NODE_NAME, ALLOT_INSTANCE_TYPE, ALLOT_NODE_LABELS,
# ALLOT_REPLACEMENT_NAME, ALLOT_SERVER, ALLOT_JOIN_TOKEN_FILE, ALLOT_REASON, ALLOT_PLAN.
# Set in the server's environment, to shape the new agent:
#   ALLOT_BIN                    the allot binary (default: build/allot beside this script, then `allot` on PATH)
#   ALLOT_EMULATED_ROOT          where the agent's work directory, log and pid file go (default $TMPDIR/allot-emulated)
#   ALLOT_EMULATED_AGENT_FLAGS   extra agent flags (e.g. "--heartbeat-interval 0.2 --health-interval 0.3")
#   ALLOT_EMULATED_FAULTS_DIR    when set, the new agent reads emulated faults from DIR/<new node name>
#   ALLOT_EMULATED_LABELS        labels to use instead of the failed node's (a replacement may sit elsewhere)
#   ALLOT_EMULATED_PID_DIR       where the agent's pid file goes (default: ALLOT_EMULATED_ROOT)
set -euo pipefail
: "${ALLOT_NODE_NAME:?run by allot server --provisioner}" "${ALLOT_INSTANCE_TYPE:?}" "${ALLOT_REPLACEMENT_NAME:?}"
: "${ALLOT_SERVER:?}" "${ALLOT_JOIN_TOKEN_FILE:?}"
here=$(cd "$(dirname "$0")" && pwd)
bin=${ALLOT_BIN:-}
if [ -z "$bin" ]; then
  if [ -x "$here/../build/allot" ]; then bin="$here/../build/allot"; else bin=$(command -v allot); fi
fi
root=${ALLOT_EMULATED_ROOT:-${TMPDIR:-/tmp}/allot-emulated}
name=$ALLOT_REPLACEMENT_NAME
labels=${ALLOT_EMULATED_LABELS:-${ALLOT_NODE_LABELS:-}}
mkdir -p "$root/agents"
faults=()
if [ -n "${ALLOT_EMULATED_FAULTS_DIR:-}" ]; then faults=(--emulate-faults "$ALLOT_EMULATED_FAULTS_DIR/$name"); fi
if [ -n "${ALLOT_PLAN:-}" ]; then
  joins=(--plan "$ALLOT_PLAN")
  echo "provision-emulated: starting $name of plan $ALLOT_PLAN ($ALLOT_INSTANCE_TYPE, labels ${labels:-none}): ${ALLOT_REASON:-}"
else
  joins=(--replaces "$ALLOT_NODE_NAME")
  echo "provision-emulated: replacing $ALLOT_NODE_NAME ($ALLOT_INSTANCE_TYPE, labels ${labels:-none}) with $name: ${ALLOT_REASON:-}"
fi
# The node's boot command: what its every boot runs, as a real node's user data or systemd unit would, --replaces
# included (a node that has joined registers with its saved credential whatever the command line says). The first
# boot is now; `allot` tests boot the node again by running the same file.
boot="$root/boot-$name.sh"
# shellcheck disable=SC2206 # the extra flags are words
extra=(${ALLOT_EMULATED_AGENT_FLAGS:-})
cmd=("$bin" agent --server "$ALLOT_SERVER" --name "$name" --instance-type "$ALLOT_INSTANCE_TYPE")
if [ -n "$labels" ]; then cmd+=(--labels "$labels"); fi
cmd+=("${joins[@]}" --token-file "$ALLOT_JOIN_TOKEN_FILE" --work-dir "$root/agents/$name" "${faults[@]}" "${extra[@]}")
{
  echo '#!/usr/bin/env bash'
  echo "# The boot command of node $name, written by provision-emulated.sh: every boot runs it."
  printf 'exec'
  printf ' %q' "${cmd[@]}"
  echo
} >"$boot"
chmod 0700 "$boot"
setsid "$boot" >>"$root/agent-$name.log" 2>&1 </dev/null &
echo $! >"${ALLOT_EMULATED_PID_DIR:-$root}/agent-$name.pid"
echo "provision-emulated: agent $name started (pid $!, boot command $boot), log $root/agent-$name.log"
