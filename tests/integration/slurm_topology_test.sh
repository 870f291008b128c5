#!/usr/bin/env bash
# Integration test: the topology.conf that `allot topology slurm-conf --plugin tree` writes is read by a real
# slurmctld, and `scontrol show topology` reports the switches, levels and nodes the nodes file describes.
#
# Usage: slurm_topology_test.sh PATH/TO/allot
# Self-contained: installs slurm-wlm with apt-get when slurmctld is missing (root only), runs a private
# slurmctld on loopback with auth/none from a temp dir, and removes everything on exit. Bounded in time.
# Exit 0 pass, 1 fail, 77 skipped (CTest SKIP_RETURN_CODE) when Slurm is missing and cannot be installed.
set -euo pipefail

ALLOT=${1:?usage: $0 PATH/TO/allot}
ALLOT=$(cd "$(dirname "$ALLOT")" && pwd)/$(basename "$ALLOT")
WAIT_S=60  # slurmctld answers in a second or two; a loaded CI machine gets slack

say() { echo "slurm_topology_test: $*"; }
die() { say "FAIL: $*"; exit 1; }

# --- Slurm ------------------------------------------------------------------------------------------------
if ! command -v slurmctld >/dev/null || ! command -v scontrol >/dev/null; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    say "SKIP: slurmctld is not installed and apt-get cannot install it here (need root on Debian)"
    exit 77
  fi
  say "installing slurm-wlm with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y --no-install-recommends slurm-wlm >/dev/null 2>&1; then
    apt-get update >/dev/null 2>&1 || true
    apt-get install -y --no-install-recommends slurm-wlm >/dev/null 2>&1 || die "apt-get install slurm-wlm failed"
  fi
fi
SLURM_VERSION=$(slurmctld -V 2>/dev/null || echo unknown)
say "using $SLURM_VERSION"

# auth/none (and cred/none) let a controller run without munge; Slurm 23.11 replaced them with auth/slurm,
# which needs a shared key file beside slurm.conf.
# Look where distributions put the plugins first; a full search of /usr/lib is slow on a cold cache.
PLUGIN_DIR=""
for d in /usr/lib/*/slurm-wlm /usr/lib/*/slurm /usr/lib64/slurm /usr/lib/slurm /usr/local/lib/slurm; do
  if compgen -G "$d/auth_*.so" >/dev/null; then PLUGIN_DIR=$d; break; fi
done
if [ -z "$PLUGIN_DIR" ]; then
  PLUGIN_DIR=$(dirname "$(find /usr/lib /usr/lib64 /usr/local/lib -name 'auth_*.so' -path '*slurm*' 2>/dev/null | head -n1)")
fi
[ -d "$PLUGIN_DIR" ] || die "cannot find Slurm's plugin directory"

# --- scratch space, cleaned up whatever happens -------------------------------------------------------------
WORK=$(mktemp -d /tmp/allot-slurm-topo.XXXXXX)
CTLD_PID=""
cleanup() {
  if [ -n "$CTLD_PID" ] && kill -0 "$CTLD_PID" 2>/dev/null; then
    kill "$CTLD_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$CTLD_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$CTLD_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

# --- the cluster: 8 nodes on 2 leaf switches (note the non-contiguous leaf-a) under one spine --------------
cat >"$WORK/nodes.yaml" <<'YAML'
- name: gpu-[1-3,8]
  instance_type: ml.p5.48xlarge
  labels: {network-node-layer-1: spine-1, network-node-layer-2: agg-1, network-node-layer-3: leaf-a}
- name: gpu-[4-7]
  instance_type: ml.p5.48xlarge
  labels: {network-node-layer-1: spine-1, network-node-layer-2: agg-1, network-node-layer-3: leaf-b}
YAML

"$ALLOT" topology slurm-conf --nodes "$WORK/nodes.yaml" --plugin tree >"$WORK/topology.conf" \
  || die "allot topology slurm-conf exited $?"
say "allot wrote topology.conf:"
sed 's/^/    /' "$WORK/topology.conf"

# --- a private slurmctld on loopback ---------------------------------------------------------------------
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
PORT=${ALLOT_SLURM_PORT:-16817}
for _ in $(seq 20); do port_busy "$PORT" || break; PORT=$((PORT + 2)); done
port_busy "$PORT" && die "no free port for slurmctld near 16817"

if [ -e "$PLUGIN_DIR/auth_none.so" ]; then
  AUTH="AuthType=auth/none
CredType=cred/none"
else
  head -c 1024 /dev/urandom >"$WORK/slurm.key"
  chmod 600 "$WORK/slurm.key"
  AUTH="AuthType=auth/slurm
CredType=cred/slurm"
fi
ME=$(id -un)
HOST=$(hostname -s)
cat >"$WORK/slurm.conf" <<CONF
ClusterName=allottopo
SlurmctldHost=${HOST}(127.0.0.1)
SlurmctldPort=${PORT}
SlurmdPort=$((PORT + 1))
${AUTH}
SlurmUser=${ME}
StateSaveLocation=${WORK}/state
SlurmdSpoolDir=${WORK}/spool
SlurmctldPidFile=${WORK}/slurmctld.pid
SlurmctldLogFile=${WORK}/slurmctld.log
SlurmctldDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
TopologyPlugin=topology/tree
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
NodeName=gpu-[1-8] NodeAddr=127.0.0.1 CPUs=1 RealMemory=1000 State=UNKNOWN
PartitionName=all Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
mkdir -p "$WORK/state" "$WORK/spool"
export SLURM_CONF="$WORK/slurm.conf"

say "starting slurmctld on 127.0.0.1:$PORT"
slurmctld -D -c -f "$SLURM_CONF" >"$WORK/slurmctld.out" 2>&1 &
CTLD_PID=$!

TOPO=""
for _ in $(seq $((WAIT_S * 2))); do
  kill -0 "$CTLD_PID" 2>/dev/null || break
  if TOPO=$(timeout 5 scontrol show topology 2>/dev/null) && [ -n "$TOPO" ]; then break; fi
  TOPO=""
  sleep 0.5
done
if [ -z "$TOPO" ]; then
  say "slurmctld output:"; sed 's/^/    /' "$WORK/slurmctld.out" "$WORK/slurmctld.log" 2>/dev/null | tail -n 40
  die "scontrol show topology did not answer within ${WAIT_S}s"
fi
say "scontrol show topology:"
echo "$TOPO" | sed 's/^/    /'

# --- checks ------------------------------------------------------------------------------------------------
# field SWITCH KEY: the value of KEY= on SWITCH's line ("" when absent).
field() { echo "$TOPO" | grep -E "^SwitchName=$1 " | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n1; }
# Slurm's own host-list expansion, sorted, space separated.
expand() { [ -z "$1" ] && return 0; scontrol show hostnames "$1" | sort | tr '\n' ' ' | sed 's/ $//'; }

FAILS=0
check() {  # check SWITCH LEVEL KIND(Nodes|Switches) "EXPECTED NAMES"
  local got_level got_list
  got_level=$(field "$1" Level)
  got_list=$(expand "$(field "$1" "$3")")
  if [ "$got_level" = "$2" ] && [ "$got_list" = "$4" ]; then
    say "ok: switch $1 at Level=$2 with $3 {$4}"
  else
    say "MISMATCH: switch $1: want Level=$2 $3 {$4}, got Level=${got_level:-none} $3 {$got_list}"
    FAILS=$((FAILS + 1))
  fi
}
check leaf-a 0 Nodes "gpu-1 gpu-2 gpu-3 gpu-8"
check leaf-b 0 Nodes "gpu-4 gpu-5 gpu-6 gpu-7"
check agg-1 1 Switches "leaf-a leaf-b"
check spine-1 2 Switches "agg-1"
check spine-1 2 Nodes "gpu-1 gpu-2 gpu-3 gpu-4 gpu-5 gpu-6 gpu-7 gpu-8"

COUNT=$(echo "$TOPO" | grep -c '^SwitchName=' || true)
if [ "$COUNT" = 4 ]; then say "ok: 4 switches, no others"; else say "MISMATCH: want 4 switches, got $COUNT"; FAILS=$((FAILS + 1)); fi
if grep -qiE "error.*(topolog|switch)|fatal" "$WORK/slurmctld.log" 2>/dev/null; then
  say "MISMATCH: slurmctld logged topology errors:"; grep -iE "error|fatal" "$WORK/slurmctld.log" | sed 's/^/    /'
  FAILS=$((FAILS + 1))
fi

[ "$FAILS" -eq 0 ] || die "$FAILS check(s) failed"
say "PASS: slurmctld ($SLURM_VERSION) accepted allot's topology.conf and reports the intended tree"
