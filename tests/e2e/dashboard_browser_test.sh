#!/usr/bin/env bash
# The web dashboard in headless Chromium: a server and three emulated GPU agents under two network nodes, two
# teams; dashboard_browser.py logs in, opens every page, makes changes through the CLI and checks what each page
# shows by itself (borrowing, reclaim and the preemption record, a job array as one row and its tasks, a failed node in red, a node whose agent is
# stopped with SIGSTOP listed suspect, the queue, the events,
# a member's view; every page at 1440 and 1024 px without "[object" and no wider than the window; times with their
# zone; the stale badge while the server is stopped with SIGSTOP, and live again after SIGCONT). Screenshots are
# kept in the build directory, under test-artifacts/dashboard/ (not in the source tree).
# Needs chromium, chromium-driver and python3-selenium (installed through scripts/deps.sh when missing).
# Usage: dashboard_browser_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=dashboard_browser
here=$(cd "$(dirname "$0")" && pwd)
if ! bash "$here/../../scripts/deps.sh" chromium chromium-driver python3-selenium >/dev/null 2>&1 ||
   ! [ -x /usr/bin/chromium ] || ! [ -x /usr/bin/chromedriver ] || ! /usr/bin/python3 -c 'import selenium' 2>/dev/null; then
  echo "$TEST_NAME: SKIP: chromium, chromium-driver and python3-selenium could not be installed"
  exit 77
fi
source "$here/lib_e2e.sh"

# A silent agent's node is timed out after a minute, not 15 s: the suspect check stops one for as long as the page
# takes to show it, and its node must stay Schedulable (suspect) meanwhile.
start_server --heartbeat-timeout 60
start_agent gpu-1 network-node-layer-3=nn-a
start_agent gpu-2 network-node-layer-3=nn-a
start_agent gpu-3 network-node-layer-3=nn-b
write_teams

ARTIFACTS="$(dirname "$ALLOT")/test-artifacts/dashboard"
rm -rf "$ARTIFACTS"
mkdir -p "$ARTIFACTS"
# The browser run is a process group of its own (python, chromedriver, chromium's processes), ended as a whole
# when it is done or after 240 s, so that nothing of it outlives the test whatever happens. Whatever happens, the
# server and the agents are resumed (the browser run stops the server with SIGSTOP for its stale check, and an
# agent for its suspect check) before the test cleans up.
AGENT_PIDS="gpu-1=$AGENT_PID_gpu_1,gpu-2=$AGENT_PID_gpu_2,gpu-3=$AGENT_PID_gpu_3"
ALLOT="$ALLOT" ARTIFACTS="$ARTIFACTS" WORK="$WORK" SERVER_PID="$SERVER_PID" AGENT_PIDS="$AGENT_PIDS" setsid /usr/bin/python3 "$here/dashboard_browser.py" &
browser=$!
PIDS+=("$browser")
end_browser() { kill -9 -- "-$browser" 2>/dev/null || true; }
setsid bash -c "sleep 240; kill -9 -- -$browser" >/dev/null 2>&1 </dev/null &
watchdog=$!
rc=0
wait "$browser" || rc=$?
end_browser
kill -CONT "$SERVER_PID" "$AGENT_PID_gpu_1" "$AGENT_PID_gpu_2" "$AGENT_PID_gpu_3" 2>/dev/null || true
kill -9 -- "-$watchdog" 2>/dev/null || true
[ "$rc" = 0 ] || fail "the browser checks failed (exit $rc; screenshots in $ARTIFACTS)"
say "PASS (screenshots in $ARTIFACTS)"
