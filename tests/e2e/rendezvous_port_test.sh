#!/usr/bin/env bash
# End to end: rank 0's MASTER_PORT held by another process on its node (docs/resiliency.md, "The rendezvous
# port"). The agent finds the port in use before it starts rank 0, the server requeues the job without using a
# retry (max_retries 0 would fail it otherwise), and the next attempt runs with another port and succeeds.
# Usage: rendezvous_port_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=rendezvous_port
source "$(dirname "$0")/lib_e2e.sh"

# A range of 100 ports whose first is held: the first job (number 0) gets the first port on attempt 0 and the
# 97th after it on attempt 1 (server/lifecycle/rendezvous_port.h). Below the kernel's ephemeral ports (32768 and
# up), where any client connection on the machine may hold a port for a moment, and chosen with the 97th free:
# a port of attempt 1 taken by something else (a parallel test) would requeue once more, rightly, and fail the
# test's figures (it did, once: 36290 + 97 was in use).
python3 - >"$WORK/holder.out" 2>&1 <<'PY' &
import random, socket, time
def free(port):
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        t.bind(("0.0.0.0", port))
        return True
    except OSError:
        return False
    finally:
        t.close()
for _ in range(200):
    low = random.randrange(20000, 32600)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("0.0.0.0", low))
    except OSError:
        s.close()
        continue
    if not free(low + 97):
        s.close()
        continue
    s.listen(1)
    print("holding", low, flush=True)
    time.sleep(300)
    break
PY
PIDS+=("$!")
for _ in $(seq 1 50); do grep_q holding "$WORK/holder.out" && break; sleep 0.1; done
grep_q holding "$WORK/holder.out" || { say "SKIP: cannot hold a port below 32600 with the 97th after it free: $(cat "$WORK/holder.out")"; exit 77; }
low=$(awk '/^holding/ {print $2}' "$WORK/holder.out")
high=$((low + 99))

start_server --master-ports "$low-$high"
start_agent gpu-1 network-node-layer-3=nn-a
write_teams
cat >"$WORK/job.yaml" <<'YAML'
name: rdzv
team: team-a
replicas: 1
per_replica: {accelerators: 1}
max_retries: 0
command: 'echo "attempt $ALLOT_ATTEMPT on port $MASTER_PORT"'
YAML
"$ALLOT" submit "$WORK/job.yaml" >/dev/null || fail "allot submit failed"
wait_state rdzv Succeeded 30
[ "$(job_field rdzv restarts)" = 0 ] || fail "the port clash used a retry: $(job_json rdzv)"
job_json rdzv | grep_q "MASTER_PORT $low was in use on node gpu-1" || fail "the history should say why it was requeued: $(job_json rdzv)"
"$ALLOT" logs rdzv >"$WORK/logs" || fail "allot logs failed"
grep_q "attempt 1 on port $((low + 97))" "$WORK/logs" || fail "the second attempt should run on port $((low + 97)): $(cat "$WORK/logs")"
grep_q "MASTER_PORT $low is in use on this node" "$WORK/agent-gpu-1.log" || fail "the agent should say why it did not start rank 0"
say "requeued from port $low to $((low + 97)) without a retry"
say PASS
