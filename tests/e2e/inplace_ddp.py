# A data-parallel PyTorch training (gloo, CPU) that keeps its state in memory only and survives the loss of a rank
# the way HyperPod's checkpointless training and torchft do (docs/resiliency.md, "Recovery in place"): when a
# collective fails (its peer died) or the membership changes (SIGUSR1, membership.json's epoch), it waits for the
# new membership, rebuilds its process group at the epoch's MASTER_ADDR/MASTER_PORT, and the rank with the most
# steps broadcasts the model and its step to the others, so a new rank continues where the survivors are.
# With CKPT_EVERY=N (the full-restart comparison) it also saves a checkpoint every N steps into
# ALLOT_CHECKPOINT_DIR and loads it at start. Every line carries t=<unix ms> for the test's measurements.
import datetime
import json
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
membership_file = os.environ.get("ALLOT_MEMBERSHIP_FILE")
total = int(os.environ.get("STEPS", "150"))
ckpt_every = int(os.environ.get("CKPT_EVERY", "0"))
ckpt = os.path.join(os.environ.get("ALLOT_CHECKPOINT_DIR", "."), "ckpt.pt")
told = False


def now_ms():
    return int(time.time() * 1000)


def say(text):
    print(f"rank {rank}: {text} t={now_ms()}", flush=True)


def on_signal(*_):
    global told
    told = True


signal.signal(signal.SIGUSR1, on_signal)


def membership():
    if not membership_file:
        return {"epoch": 0, "master_addr": os.environ["MASTER_ADDR"], "master_port": int(os.environ["MASTER_PORT"])}
    with open(membership_file) as f:
        return json.load(f)


torch.manual_seed(0)
model = torch.nn.Linear(16, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
step = 0
if ckpt_every and os.path.exists(ckpt):
    state = torch.load(ckpt)
    model.load_state_dict(state["model"])
    step = state["step"]
    say(f"loaded checkpoint at step {step} (restart {os.environ.get('ALLOT_RESTART_COUNT')})")
say(f"pid {os.getpid()} epoch {os.environ.get('ALLOT_MEMBERSHIP_EPOCH', '-')} port {os.environ['MASTER_PORT']}")


def join(m):
    """Joins membership m and takes the state of the rank that has done the most steps."""
    global step
    dist.init_process_group("gloo", init_method=f"tcp://{m['master_addr']}:{m['master_port']}", rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=30))
    steps = [torch.zeros(1, dtype=torch.long) for _ in range(world)]
    dist.all_gather(steps, torch.tensor([step], dtype=torch.long))
    values = [int(s.item()) for s in steps]
    src = values.index(max(values))
    for p in model.parameters():
        dist.broadcast(p.data, src)
    before = step
    step = values[src]
    say(f"joined epoch {m['epoch']} at step {step} (had {before}, state from rank {src})")


def rejoin(epoch):
    """Waits for a membership newer than `epoch`, then joins it."""
    global told
    try:
        dist.destroy_process_group()
    except Exception:  # the group may be broken already
        pass
    deadline = time.time() + 150
    while True:
        m = membership()
        if m["epoch"] > epoch:
            break
        if time.time() > deadline:
            say("no new membership within 150 s; giving up")
            sys.exit(1)
        time.sleep(0.05)
    told = False
    join(m)
    return m["epoch"]


m = membership()
epoch = m["epoch"]
join(m)
while step < total:
    try:
        x = torch.randn(32, 16)
        loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        opt.step()
        step += 1
        say(f"step {step} loss {loss.item():.4f}")
        if ckpt_every and rank == 0 and step % ckpt_every == 0:
            torch.save({"step": step, "model": model.state_dict()}, ckpt + ".tmp")
            os.replace(ckpt + ".tmp", ckpt)
        time.sleep(0.1)
        # The signal only says "look": the file's epoch decides (a signal may arrive after this rank already joined
        # the epoch it announces, having found it in the file when its collective failed).
        if membership_file and (told or membership()["epoch"] > epoch):
            signalled, told = told, False
            if membership()["epoch"] > epoch:
                say(f"membership changed (signal: {signalled}); rebuilding the process group")
                epoch = rejoin(epoch)
    except RuntimeError as e:
        if not membership_file:
            raise  # a full-restart job: the run fails and allot restarts it
        say(f"collective failed at step {step} ({str(e).splitlines()[0][:120]}); waiting for a new membership")
        epoch = rejoin(epoch)
dist.destroy_process_group()
say("done")
