#!/usr/bin/env bash
# End to end (docs/resiliency.md): a real 2-rank PyTorch DDP training (Debian's python3-torch, gloo on CPU)
# that checkpoints into ALLOT_CHECKPOINT_DIR. One node's agent is killed with SIGKILL mid-training: the
# surviving rank dies of its peer ("Connection reset by peer") first, yet the fault costs exactly one restart,
# charged to the node; the job continues from its last checkpointed step on healthy nodes and finishes.
# Installs python3-torch through scripts/deps.sh; skipped (77) only when it cannot be installed.
# Usage: resil_ddp_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=resil_ddp
source "$(dirname "$0")/lib_e2e.sh"
source "$(dirname "$0")/lib_resil.sh"

require_torch

cat >"$WORK/train.py" <<'PY'
import datetime, os, time
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
path = os.path.join(os.environ["ALLOT_CHECKPOINT_DIR"], "ckpt.pt")
dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=60))
torch.manual_seed(0)
model = DDP(torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
start = 0
if os.path.exists(path):
    ck = torch.load(path)
    model.module.load_state_dict(ck["model"])
    opt.load_state_dict(ck["opt"])
    start = ck["step"]
    print(f"rank {rank}: resumed from step {start} (restart {os.environ['ALLOT_RESTART_COUNT']})", flush=True)
steps = int(os.environ.get("STEPS", "40"))
for step in range(start + 1, steps + 1):
    x = torch.randn(32, 16)
    loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if rank == 0:  # after the all-reduce: every rank has this step's weights
        torch.save({"step": step, "model": model.module.state_dict(), "opt": opt.state_dict()}, path + ".tmp")
        os.replace(path + ".tmp", path)
    print(f"rank {rank}: step {step} loss {loss.item():.4f}", flush=True)
    time.sleep(0.25)
dist.destroy_process_group()
print(f"rank {rank}: done", flush=True)
PY
chmod 0644 "$WORK/train.py"

start_resil_server
start_faulty_agent gpu-1 network-node-layer-3=nn-a
start_faulty_agent gpu-2 network-node-layer-3=nn-a
start_faulty_agent gpu-3 network-node-layer-3=nn-a
write_teams
cat >"$WORK/ddp.yaml" <<YAML
name: ddp
team: team-a
replicas: 2
per_replica: {accelerators: 1}
max_retries: 1
checkpoint_interval: 1
env: {STEPS: "40"}
command: ["/usr/bin/python3", "$WORK/train.py"]
YAML
"$ALLOT" submit "$WORK/ddp.yaml" >/dev/null
wait_state ddp Running
for _ in $(seq 1 600); do "$ALLOT" logs ddp --replica 0 | grep_q "rank 0: step 8 " && break; sleep 0.1; done
"$ALLOT" logs ddp --replica 0 | grep_q "rank 0: step 8 " || fail "DDP training did not reach step 8: $("$ALLOT" logs ddp | tail -n 20)"
victim=$(job_json ddp | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["placement"][0]["replicas"][1]["node"])')
pid_var="AGENT_PID_${victim//-/_}"
killed=$(( $(job_field ddp restarts) + $(job_field ddp preemptions) ))
old=$(job_procs ddp)
t0=$(now_ms)
say "rank 1 runs on $victim: killing its agent (pid ${!pid_var}) with SIGKILL"
kill -9 "${!pid_var}"
for _ in $(seq 1 300); do [ "$(job_field ddp restarts)" = 1 ] && [ "$(job_field ddp state)" = Running ] && break; sleep 0.1; done
t1=$(now_ms)
[ "$(job_field ddp restarts)" = 1 ] || fail "ddp should have restarted once, not $(job_field ddp restarts)"
case " $(job_nodes ddp) " in *" $victim "*) fail "ddp was placed on $victim, whose agent is dead";; esac
for _ in $(seq 1 600); do "$ALLOT" logs ddp --replica 0 | grep_q "resumed from step" && break; sleep 0.1; done
t2=$(now_ms)
resumed=$("$ALLOT" logs ddp --replica 0 | grep -o "resumed from step [0-9]*" | head -n1 | grep -o "[0-9]*$")
[ -n "$resumed" ] && [ "$resumed" -ge 8 ] || fail "ddp should continue from its last checkpoint (step >= 8): $("$ALLOT" logs ddp --replica 0 | tail -n 5)"
next=$((resumed + 1))
"$ALLOT" logs ddp --replica 0 | grep_q "resumed from step $resumed (restart 1)" || fail "ALLOT_RESTART_COUNT should be 1"
wait_state ddp Succeeded 120
"$ALLOT" logs ddp --replica 0 | grep_q "rank 0: step $next " || fail "the run after the restart should start at step $next"
"$ALLOT" logs ddp --replica 1 | grep_q "rank 1: done" || fail "rank 1 should finish"
[ "$(job_field ddp restarts)" = 1 ] || fail "the fault should cost exactly one restart, not $(job_field ddp restarts)"
cause=$("$ALLOT" describe ddp -o json | json_get '["restart_history"][0]["cause"]')
echo "$cause" | grep_q "$victim" || fail "the restart's cause should name node $victim: $cause"
charged=$("$ALLOT" describe ddp -o json | json_get '["restart_history"][0]["node"]')
[ "$charged" = "$victim" ] || fail "the restart should be charged to node $victim, not to the job ('$charged'): $cause"
lost=$("$ALLOT" describe ddp -o json | json_get '["restart_history"][0]["work_lost_s"]')
say "killed at step >= 8, resumed from step $resumed; fault to restart decided $((t1 - t0)) ms, to resumed $((t2 - t0)) ms; cause: $cause; work lost ${lost}s"
top=$("$ALLOT" logs ddp --replica 0 --attempt "$killed" | grep -o "rank 0: step [0-9]*" | tail -n1 | grep -o "[0-9]*$" || true)
steps=$(( ${top:-0} - resumed )); [ "$steps" -ge 0 ] || steps=0
if "$ALLOT" nodes | grep_q "^$victim-r1 "; then outcome="$victim $(node_health "$victim" || echo retired), replaced by $victim-r1 ($(node_health "$victim-r1" || true))"
else outcome="$victim $(node_health "$victim" || true)"; fi
fault_row "agent kill -9 (real DDP, rank 1's node)" "$(restarts_charged ddp)" "$(seconds $((t2 - t0)))" "$steps (rank 0 at step ${top:-?}, resumed from $resumed)" \
  "$outcome" "not sampled" "$(still_running $old) of $(echo $old | wc -w)"
say PASS
