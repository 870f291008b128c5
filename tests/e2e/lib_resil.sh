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

# start_resil_server [extra flags]
start_resil_server() {
  start_server --heartbeat-timeout 2 --fault-window "${FAULT_WINDOW:-0.5}" --reboot-timeout 20 --replace-silent-after 4 \
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
