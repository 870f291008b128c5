#!/usr/bin/env bash
# End to end: stops before starts across a kill -9 of the server (issue 27 item 2; docs/scheduling.md, "Stops
# before starts"). A job is moved off a drained node whose agent stops its replica slowly (the replica ignores
# SIGTERM, and the agent's stop grace is long); the server is killed -9 and started again on the same port before that
# stop is over. The restarted server knows nothing of the stop under way (it is not journaled): it must hold the
# new run until the drained node's agent has said its replica is gone. The replicas' marks must show no overlap.
# The stop grace is 60 s and the test ends the old replica itself (kill -9, as a replica that finally exits) once it
# has seen the restarted server hold the new run: how long the restart takes on a loaded machine does not matter.
# Usage: server_restart_stop_gate_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=server_restart_stop_gate
source "$(dirname "$0")/lib_e2e.sh"
source "$(dirname "$0")/lib_marks.sh"

# The server listens on a port below the kernel's ephemeral range (32768 on), so that no other test's outgoing
# connection can take it while the server is down between the kill and the restart on the same port.
port_free() { python3 -c 'import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1])))' "$1" 2>/dev/null; }
port=$((10000 + $$ % 10000))
for _ in $(seq 1 20); do port_free "$port" && break; port=$((10000 + (port + 7) % 10000)); done
SERVER_LISTEN=127.0.0.1:$port start_server
AGENT_STOP_GRACE=60 start_agent gpu-1 network-node-layer-3=nn-a
AGENT_STOP_GRACE=60 start_agent gpu-2 network-node-layer-3=nn-a
write_teams
cat >"$WORK/solo.yaml" <<YAML
name: solo
team: team-a
replicas: 1
per_replica: {accelerators: 1}
command: '$(mark_command)'
YAML
"$ALLOT" submit "$WORK/solo.yaml" >/dev/null || fail "submit solo"
wait_state solo Running
wait_mark solo 0 0
first=$(job_json solo | grep -o '"nodes": *\[ *"[^"]*"' | grep -o 'gpu-[0-9]*')
[ -n "$first" ] || fail "solo has no node: $(job_json solo)"

say "draining $first, then kill -9 of the server within the old replica's stop grace"
"$ALLOT" node drain "$first" >/dev/null || fail "allot node drain $first"
sleep 0.5  # the drained node's agent has begun stopping the old replica (it ignores SIGTERM: 60 s)
kill -9 "$SERVER_PID"
for _ in $(seq 1 100); do gone "$SERVER_PID" && port_free "$port" && break; sleep 0.05; done
SERVER_LISTEN=127.0.0.1:$port start_server
old_pid=$(mark_pid solo 0 0)
gone "$old_pid" && fail "the old replica stopped before the restarted server was up: the test proves nothing"

# While the old replica runs, the restarted server holds the new run and says why.
seen=$(seen_waiting solo 0 1 '"waits_for_stops"\|"waits_for_first_heartbeats"')
[ -s "$WORK/marks/solo.0.1" ] && ! gone "$old_pid" && fail "the new replica started while the old one (pid $old_pid) still runs"
kill -9 "$old_pid"
wait_mark solo 0 1 30
check_marks once after:solo@0:solo@1
[ -n "$seen" ] || fail "solo should say what its new run waits for after the restart: $(job_json solo)"
say "held: $(echo "$seen" | grep -o '"waits_for[a-z_]*": *[^]]*\]' | head -n1)"
say PASS
