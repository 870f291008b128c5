# Shared helpers for the end-to-end tests that drive a real `allot server` and agents on loopback through
# the CLI. Source it after setting ALLOT; every process a test starts is recorded and killed on exit,
# whatever happens, and the scratch directory is removed. Every wait has a deadline.
set -euo pipefail

ALLOT=${ALLOT:?set ALLOT to the allot binary before sourcing lib_e2e.sh}
ALLOT=$(cd "$(dirname "$ALLOT")" && pwd)/$(basename "$ALLOT")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/allot-e2e.XXXXXX")
TEST_NAME=${TEST_NAME:-e2e}
PIDS=()
PG_HELPER="$(cd "$(dirname "${BASH_SOURCE[0]}")/../support" && pwd)/pg_instance.sh"
PG_DIR=""  # set by start_postgres

# The tests' python3 is Debian's /usr/bin/python3, whose packages (Selenium, PyTorch) they use. A machine with
# pyenv puts its shim first on PATH: a bash script that runs a dozen programs to pick a Python, 0.4 s of CPU a
# call against 0.03 s, and a test that polls through python3 spent most of a core on it (bench/RESULTS.md, "Test
# suite time"). A link first on PATH, not a shell function: `python3 ... &` must leave in $! the pid of Python
# itself, which tests freeze and kill (a function would run in a forked shell of its own).
mkdir -p "$WORK/bin"
[ -x /usr/bin/python3 ] && ln -s /usr/bin/python3 "$WORK/bin/python3"
export PATH="$WORK/bin:$PATH"
say() { echo "$TEST_NAME: $*"; }
fail() {
  say "FAIL: $*"
  for f in "$WORK"/*.log; do [ -f "$f" ] && { echo "--- $f (last lines)"; tail -n 25 "$f"; }; done
  exit 1
}
# `grep -q` stops reading at the first match; under pipefail the command writing into it then dies of
# SIGPIPE and the pipeline fails although the text matched. grep_q reads everything, so only the match counts.
grep_q() { grep "$@" >/dev/null; }

cleanup() {
  local rc=$? _ p left
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  # Up to 0.3 s to end on SIGTERM, as they mostly do at once; then SIGKILL for what is left.
  for _ in 1 2 3 4 5 6; do
    left=0
    for p in "${PIDS[@]}"; do gone "$p" || { left=1; break; }; done
    [ "$left" = 0 ] && break
    sleep 0.05
  done
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  # Replicas orphaned by an agent killed with -9 record their pids under $WORK/pids; end their groups too.
  for f in "$WORK"/pids/* ; do
    [ -f "$f" ] || continue
    local p; p=$(cat "$f" 2>/dev/null || true)
    [ -n "$p" ] && { kill -9 -- "-$p" 2>/dev/null || kill -9 "$p" 2>/dev/null || true; }
  done
  # The agents' cgroup directories (agent/cgroups.h), which outlive the host's test run: an agent killed with -9
  # leaves them to its watchdog, which finds them in the state file this cleanup is about to remove.
  local cg
  for cg in $(sed -n 's/.*cgroups: each replica gets its own cgroup\( v1\)\? under \([^ ]*\)\( and \([^ ]*\)\)\?.*/\2 \4/p' "$WORK"/agent-*.log 2>/dev/null | sort -u); do
    [ -d "$cg" ] || continue
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      find "$cg" -mindepth 1 -maxdepth 1 -type d -name 'r-*' -exec rmdir {} \; 2>/dev/null || true
      rmdir "$cg/agent" 2>/dev/null || true
      rmdir "$cg" 2>/dev/null && break
      sleep 0.05
    done
  done
  # The database goes after the servers that write to it (start_postgres).
  [ -n "$PG_DIR" ] && { bash "$PG_HELPER" stop "$PG_DIR" >/dev/null 2>&1 || true; }
  declare -F fault_cleanup >/dev/null && fault_cleanup  # lib_faults.sh's mounts, before their directory goes
  declare -F test_cleanup >/dev/null && test_cleanup    # a test's own (images it built, say)
  rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT
# The CLI's config file of the tests' own: never the developer's contexts.
export ALLOT_CONFIG="$WORK/allot-config"
unset ALLOT_TOKEN ALLOT_CONTEXT
trap 'exit 1' INT TERM
mkdir -p "$WORK/pids"

# Agents started as root run each team's replicas as its own uid from a range no account uses (they refuse
# root replicas without --allow-root); a test that needs root replicas sets AGENT_USER_FLAGS=--allow-root
# before start_agent. The replicas of the tests write their pids under $WORK/pids, so every uid must be able
# to reach it.
if [ "$(id -u)" = 0 ]; then
  AGENT_USER_FLAGS=${AGENT_USER_FLAGS---run-as-range 1000000000-1999999999}
  chmod 0755 "$WORK"
  chmod 1777 "$WORK/pids"
else
  AGENT_USER_FLAGS=${AGENT_USER_FLAGS-}
fi

# A process that is gone, or a zombie nobody reaped yet, counts as gone.
gone() {
  kill -0 "$1" 2>/dev/null || return 0
  local state; state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null || echo Z)
  [ "$state" = Z ]
}

# NODE_PID: a fragment of a replica's command that prints the pid of the shell running it as the node names it.
# Replicas run in their agent's PID namespace (docs/security.md, "After the agent dies"), where $$ and $! are the
# namespace's numbers; `read` runs in the shell itself, so /proc/self (the node's /proc) names that shell. In a
# background group, `{ $NODE_PID >FILE; exec sleep 300; } &`, it names the background process.
NODE_PID='read -r me _ </proc/self/stat; echo $me'

# start_server [extra flags]: a server on a free loopback port (or on SERVER_LISTEN, HOST:PORT); exports
# ALLOT_SERVER (https://... when the extra flags include --tls-cert and --tls-key).
start_server() {
  # Tests run side by side, and jobs of theirs with the same number would get the same rendezvous port from the
  # default range: a start found it held and was requeued (an attempt without a retry), shifting attempt numbers.
  # Each test takes its own ten ports below the kernel's ephemeral range (32768 on), by its shell's pid.
  local ports=()
  case " $* " in *" --master-ports "*) ;; *) local low=$((20000 + ($$ % 1270) * 10)); ports=(--master-ports "$low-$((low + 9))");; esac
  # Emptied here, not only by the redirection below: that happens in the forked child, and a loop that read the
  # file before it would find a previous server's URL (a restart after kill -9) and call a dead port.
  : >"$WORK/server.log"
  "$ALLOT" server --listen "${SERVER_LISTEN:-127.0.0.1:0}" --data "$WORK/server" "${ports[@]}" "$@" >"$WORK/server.log" 2>"$WORK/server.err.log" &
  SERVER_PID=$!
  PIDS+=("$SERVER_PID")
  local url=""
  for _ in $(seq 1 100); do
    url=$(grep -o 'https\?://127\.0\.0\.1:[0-9]*' "$WORK/server.log" 2>/dev/null | head -n1 || true)
    [ -n "$url" ] && break
    gone "$SERVER_PID" && fail "allot server exited at start"
    sleep 0.1
  done
  [ -n "$url" ] || fail "allot server did not print its URL within 10 s"
  export ALLOT_SERVER=$url
  # The CLI acts as the bootstrap admin; agents join with a join token made by that admin.
  [ -s "$WORK/server/admin-token" ] || fail "the server did not write its admin token file"
  ALLOT_TOKEN=$(cat "$WORK/server/admin-token")
  export ALLOT_TOKEN
  # E2E_CA: the CA of an https server, for this one call (a test may want other calls to go without it).
  "$ALLOT" token create --role agent-join --description e2e-agents ${E2E_CA:+--ca "$E2E_CA"} >"$WORK/join-token" \
    2>"$WORK/join-token.err" || fail "cannot make an agent-join token: $(cat "$WORK/join-token.err")"
  say "server at $url"
}

# start_postgres [optional]: a throw-away PostgreSQL server for this test (tests/support/pg_instance.sh) in
# PG_DIR=$WORK/pg; exports PG_URL (postgresql://allot@127.0.0.1:PORT/allot). It is stopped when the test ends,
# after the test's processes. Where PostgreSQL cannot be installed the test is skipped (exit 77), and where it
# cannot start the test fails; with `optional`, either returns 1 after saying why, and the test goes on without it.
# `bash "$PG_HELPER" halt|resume "$PG_DIR"` stops and restarts it as a crash would.
start_postgres() {
  local optional=${1:-} rc=0
  PG_DIR="$WORK/pg"
  PG_URL=$(bash "$PG_HELPER" start "$PG_DIR" 2>"$WORK/pg-start.log") || rc=$?
  if [ $rc != 0 ] && [ "$optional" = optional ]; then
    say "PostgreSQL not available: $(cat "$WORK/pg-start.log")"
    return 1
  fi
  if [ $rc = 77 ]; then say "SKIP: $(cat "$WORK/pg-start.log")"; exit 77; fi
  [ $rc = 0 ] || fail "cannot start PostgreSQL: $(cat "$WORK/pg-start.log")"
  export PG_URL
  say "PostgreSQL at $PG_URL"
}

# start_agent NAME LABELS [extra flags]: an emulated ml.g5.8xlarge node (1 GPU); waits until it is Schedulable.
# Its stop grace is AGENT_STOP_GRACE seconds (1 if unset).
# Starting NAME again (after a kill) reuses its work directory and appends to its log.
start_agent() {
  local name=$1 labels=$2; shift 2
  "$ALLOT" agent --server "$ALLOT_SERVER" --name "$name" --instance-type ml.g5.8xlarge --labels "$labels" \
    --work-dir "$WORK/agents/$name" --token-file "$WORK/join-token" --heartbeat-interval "${AGENT_HEARTBEAT_INTERVAL:-0.2}" --stop-grace "${AGENT_STOP_GRACE:-1}" $AGENT_USER_FLAGS "$@" \
    >>"$WORK/agent-$name.log" 2>&1 &
  local pid=$!
  PIDS+=("$pid")
  eval "AGENT_PID_${name//-/_}=$pid"
  for _ in $(seq 1 100); do
    "$ALLOT" nodes 2>/dev/null | grep_q "^$name .*Schedulable" && return 0
    sleep 0.1
  done
  fail "agent $name did not register within 10 s"
}

# job_json JOB: the job as the server describes it (one line).
job_json() { "$ALLOT" describe "$1" -o json | tr -d '\n'; }
# job_field JOB FIELD: a scalar field of the job ("state", "restarts", "borrowing" ...), not of its history.
job_field() {
  job_json "$1" | sed -e 's/"history": *\[[^]]*\]//' | grep -o "\"$2\": *[^,}]*" | head -n1 | sed -e "s/\"$2\": *//" -e 's/^"//' -e 's/"$//'
}

# wait_state JOB STATE [SECONDS]: polls until the job is in STATE; fails with the job's state and reason.
wait_state() {
  local job=$1 want=$2 limit=${3:-20} state=""
  for _ in $(seq 1 $((limit * 10))); do
    state=$(job_field "$job" state 2>/dev/null || true)
    [ "$state" = "$want" ] && return 0
    sleep 0.1
  done
  fail "$job is '$state', not $want, after ${limit}s: $(job_field "$job" reason 2>/dev/null || true)"
}

# expect_rc WANT COMMAND...: runs the command and checks its exit code.
expect_rc() {
  local want=$1; shift
  set +e
  "$@" >"$WORK/last.out" 2>"$WORK/last.err"
  local rc=$?
  set -e
  [ "$rc" = "$want" ] || fail "'$*' exited $rc, want $want: $(cat "$WORK/last.err")"
}

write_teams() {
  cat >"$WORK/teams.yaml" <<'YAML'
policy:
  task_prioritization: task-ranking
  priority_classes:
    - {name: inference, weight: 100}
    - {name: training, weight: 50}
teams:
  - name: team-a
    allocation:
      - {instance_type: ml.g5.8xlarge, instances: 1}
    sharing: {strategy: LendAndBorrow, borrow_limit: 100}
  - name: team-b
    allocation:
      - {instance_type: ml.g5.8xlarge, instances: 1}
    sharing: {strategy: LendAndBorrow, borrow_limit: 100}
YAML
  "$ALLOT" apply "$WORK/teams.yaml" >/dev/null || fail "allot apply failed"
}

# log_has JOB TEXT [SECONDS]: polls JOB's logs (every rank) until TEXT shows, or fails the test.
log_has() {
  local job=$1 want=$2 limit=${3:-20}
  for _ in $(seq 1 $((limit * 5))); do
    "$ALLOT" logs "$job" >"$WORK/$job-logs.out" 2>/dev/null || true
    grep_q -- "$want" "$WORK/$job-logs.out" && return 0
    sleep 0.2
  done
  fail "the replicas of $job never said '$want': $(cat "$WORK/$job-logs.out")"
}
