# Helpers for the resiliency tests (docs/resiliency.md): a server with short lifecycle timeouts and
# scripts/provision-emulated.sh as its provisioner, agents with emulated faults files, and waits on node states.
# Source after lib_e2e.sh. Provisioned agents write their pid files under $WORK/pids, so lib_e2e's cleanup ends
# them (and, through their watchdogs, their replicas).
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mkdir -p "$WORK/faults" "$WORK/emulated"
export ALLOT_BIN=$ALLOT ALLOT_EMULATED_ROOT=$WORK/emulated ALLOT_EMULATED_PID_DIR=$WORK/pids ALLOT_EMULATED_FAULTS_DIR=$WORK/faults
# Heartbeats every 0.2 s, health checks every 0.3 s, a 1 s deep check.
RESIL_AGENT_FLAGS="--heartbeat-interval 0.2 --health-interval 0.3 --deep-check-seconds 1 --stop-grace 1"
export ALLOT_EMULATED_AGENT_FLAGS="$RESIL_AGENT_FLAGS $AGENT_USER_FLAGS"

# start_resil_server [extra flags]. REPLACE_SILENT_AFTER (4 s): a test that stops an agent on purpose for longer than
# a loaded machine may take to restart it sets more. HEARTBEAT_TIMEOUT (2 s): a test whose faults are found by checks,
# not by silence, sets more, because an agent starved of CPU for three quarters of it fences its replicas (correctly:
# it cannot show the server it is alive), which a test on a busy machine would count as a second fault.
start_resil_server() {
  start_server --heartbeat-timeout "${HEARTBEAT_TIMEOUT:-2}" --fault-window "${FAULT_WINDOW:-0.5}" --reboot-timeout 20 --replace-silent-after "${REPLACE_SILENT_AFTER:-4}" \
    --provisioner "$REPO/scripts/provision-emulated.sh" "$@"
}

# start_faulty_agent NAME LABELS [extra flags]: start_agent with the emulated faults file $WORK/faults/NAME.
start_faulty_agent() {
  local name=$1 labels=$2; shift 2
  : >"$WORK/faults/$name"
  start_agent "$name" "$labels" --health-interval 0.3 --deep-check-seconds 1 --emulate-faults "$WORK/faults/$name" "$@"
}

inject() { echo "$2" >>"$WORK/faults/$1"; }

node_json() { "$ALLOT" describe node "$1" -o json 2>/dev/null | tr -d '\n'; }
node_health() { node_json "$1" | grep -o '"health": *"[A-Za-z]*"' | head -n1 | sed 's/.*"\([A-Za-z]*\)"$/\1/'; }

# wait_node NAME HEALTH [SECONDS]
wait_node() {
  local name=$1 want=$2 limit=${3:-30} h=""
  for _ in $(seq 1 $((limit * 10))); do
    h=$(node_health "$name" || true)
    [ "$h" = "$want" ] && return 0
    sleep 0.1
  done
  fail "node $name is '$h', not $want, after ${limit}s: $("$ALLOT" describe node "$name" 2>&1 | head -n 30)"
}

# job_nodes JOB: the nodes of its placement, one line, sorted.
job_nodes() {
  "$ALLOT" describe "$1" -o json | python3 -c 'import json,sys; j=json.load(sys.stdin); print(" ".join(sorted({r["node"] for p in j.get("placement",[]) for r in p.get("replicas",[])})))'
}
# json_get JSONPATH: a field of the JSON on stdin, e.g. json_get '["restart_history"][0]["cause"]'.
json_get() { python3 -c "import json,sys; j=json.load(sys.stdin); print(j$1)"; }
# metrics: the server's /metrics text.
metrics() {
  python3 - "$ALLOT_SERVER" "$ALLOT_TOKEN" <<'PY'
import sys, urllib.request
req = urllib.request.Request(sys.argv[1] + "/metrics", headers={"Authorization": "Bearer " + sys.argv[2]})
print(urllib.request.urlopen(req, timeout=10).read().decode())
PY
}

# now_ms: wall-clock milliseconds, for the fault-to-resume times the tests print.
now_ms() { date +%s%3N; }

# require_torch: replicas run with PATH=/usr/local/bin:/usr/bin:/bin, so Debian's own python3 is the one that must
# have torch; installed through scripts/deps.sh when missing, and the test is skipped (77) only when it cannot be.
require_torch() {
  /usr/bin/python3 -c "import torch.distributed" 2>/dev/null && return 0
  bash "$REPO/scripts/deps.sh" python3-torch >"$WORK/deps.log" 2>&1 || true
  if ! /usr/bin/python3 -c "import torch.distributed" 2>/dev/null; then
    say "SKIP: python3-torch cannot be installed here ($(tail -n 2 "$WORK/deps.log" | tr '\n' ' '))"
    exit 77
  fi
}

# The per-fault table's figures (bench/RESULTS.md, "Per-fault table: issue 27"): measurement only, never a check.
# job_procs JOB [NAME=VALUE...]: "PID:START" of each live process this test's agents started for JOB (its environment
# has ALLOT_JOB=JOB, every NAME=VALUE, and this test's $WORK in some value or its working directory under $WORK);
# zombies and the trainers' short `sleep`s are left out. Taken just before a fault: the old attempt's processes.
job_procs() {
  python3 - "$WORK" "$@" <<'PY' || true
import os, sys
work, job, want = sys.argv[1].encode(), sys.argv[2].encode(), [a.encode().split(b"=", 1) for a in sys.argv[3:]]
for p in os.listdir("/proc"):
    if not p.isdigit():
        continue
    try:
        env = dict(x.split(b"=", 1) for x in open(f"/proc/{p}/environ", "rb").read().split(b"\0") if b"=" in x)
        stat = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
        comm = open(f"/proc/{p}/comm").read().strip()
        cwd = os.readlink(f"/proc/{p}/cwd").encode()
    except OSError:
        continue
    if stat[0] == "Z" or comm == "sleep" or env.get(b"ALLOT_JOB") != job:
        continue
    if any(env.get(k) != v for k, v in want):
        continue
    if any(work in v for v in env.values()) or cwd.startswith(work):
        print(f"{p}:{stat[19]}")
PY
}
# still_running PID:START...: how many of those processes still run (the same process: its start time unchanged).
still_running() {
  python3 - "$@" <<'PY' || echo "?"
import sys
n = 0
for ps in sys.argv[1:]:
    p, start = ps.split(":")
    try:
        stat = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        continue
    if stat[0] != "Z" and stat[19] == start:
        n += 1
print(n)
PY
}
# restarts_charged JOB: the job's restarts and whom each was charged to, e.g. "1 (node gpu-1)", "2 (job, node gpu-3)".
restarts_charged() {
  job_json "$1" | python3 -c 'import json,sys; j=json.load(sys.stdin); h=j.get("restart_history",[]); print((str(j.get("restarts")) + " (" + ", ".join(("node " + r["node"]) if r.get("node") else "job" for r in h) + ")") if h else j.get("restarts"))' || echo "?"
}
# node_outcome NODE: the health NODE is in now ("retired" once gone) and, if a node replaces it, that one's.
node_outcome() {
  local h r n
  h=$(node_health "$1" || true)
  for n in $("$ALLOT" nodes -o json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); d=d.get("nodes", d) if isinstance(d, dict) else d; print(" ".join(x["name"] for x in d))' || true); do
    node_json "$n" | grep_q '"replaces": *"'"$1"'"' && r="$n"
  done
  echo "$1 ${h:-retired}${r:+, replaced by $r ($(node_health "$r" || true))}"
}
# seconds MS: milliseconds as seconds with one decimal.
seconds() { awk -v m="$1" 'BEGIN{printf "%.1f s", m/1000}'; }
# fault_row FAULT RESTARTS RESUME LOST NODE OVERLAP ORPHANS: the test's row of the per-fault table.
fault_row() { say "table: $1 | restarts $2 | fault to resume $3 | steps lost $4 | node $5 | overlap $6 | orphans $7"; }
