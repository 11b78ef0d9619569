"""The torchrun elastic peer of a strata-elastic resize: one worker of
`torchrun --nnodes=MIN:MAX --rdzv-backend=c10d --max-restarts=K elastic_peer.py ...`,
training the model and recipe of a resolved strata config (JSON of strata-train
--dry-run) over gloo on the CPU, with a fixed global batch cut into WORLD_SIZE
rank slices (as strata-elastic keeps it), a checkpoint every --ckpt-every steps
(rank 0, written to a temporary file and renamed), and a resume from it each time
torchrun (re)starts the workers.
  elastic_peer.py --config C.json --global-batch 128 --steps 300 --ckpt-every 20 \
                  --ckpt DIR/peer.pt --events DIR/events.jsonl [--threads 1]
Rank 0 appends one JSON object per line to --events, each with "t" (Unix time):
  {"event": "start", "world", "restart"}          the process began (before torch's import)
  {"event": "joined", "world", "restart"}         the process group is up (rendezvous done)
  {"event": "resumed", "step"}                    the checkpoint it loaded (0: none)
  {"event": "step", "step", "world"}              every step it finished
  {"event": "checkpoint", "step"}                 every checkpoint renamed into place
The benchmark (bench/elastic_resize.sh) reads the time from a membership change
to the first "step" at the new world size, and the steps lost (the last step
before the change minus the step resumed from)."""
import time

START = time.time()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import peer_data  # noqa: E402
import peer_models  # noqa: E402
import peer_recipe  # noqa: E402


def parse():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", required=True, help="resolved strata config as JSON")
    p.add_argument("--global-batch", type=int, required=True, help="samples per step over all ranks")
    p.add_argument("--steps", type=int, required=True, help="steps of the whole run")
    p.add_argument("--ckpt-every", type=int, default=20)
    p.add_argument("--ckpt", required=True, help="checkpoint file (shared by the workers)")
    p.add_argument("--events", required=True, help="JSON lines rank 0 appends to")
    p.add_argument("--threads", type=int, default=1, help="torch compute threads per worker")
    p.add_argument("--file-store", action="store_true",
                   help="rendezvous of the process group through a file per restart, not the agent's store")
    return p.parse_args()


def main():
    a = parse()
    cfg = json.load(open(a.config))
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))

    def event(kind, **kw):
        if rank == 0:
            with open(a.events, "a") as f:
                f.write(json.dumps({"t": time.time(), "event": kind, **kw}) + "\n")

    event("start", t_process=START, world=world, restart=restart)
    if a.global_batch % world:
        raise SystemExit(f"elastic_peer: global batch {a.global_batch} does not split over {world} workers")
    b = a.global_batch // world
    torch.set_num_threads(a.threads)
    if a.file_store:
        # a store of this restart's own: the agent's TCP store handed restarted
        # workers addresses of the previous attempt's here (torch 2.15; gloo's
        # connectFullMesh refused, or init_process_group hung)
        dist.init_process_group("gloo", init_method=f"file://{a.ckpt}.store-{restart}", rank=rank, world_size=world)
    else:
        dist.init_process_group("gloo")
    event("joined", world=world, restart=restart)
    torch.manual_seed(cfg["seed"])
    x, y = peer_data.fashion_mnist(cfg, "train")
    model = peer_models.build(cfg, tuple(x.shape[1:]))
    opt = peer_recipe.optimizer(cfg, model)
    sched = peer_recipe.scheduler(cfg, opt, a.steps)
    step = 0
    if os.path.exists(a.ckpt):
        state = torch.load(a.ckpt, weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        step = state["step"]
    event("resumed", step=step)
    run = torch.nn.parallel.DistributedDataParallel(model)
    per_epoch = len(x) // a.global_batch
    while step < a.steps:
        # the global batch of this step: the same on every world size, this rank's slice of it
        epoch, i = divmod(step, per_epoch)
        perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(cfg["seed"] + epoch))
        idx = perm[i * a.global_batch + rank * b:i * a.global_batch + (rank + 1) * b]
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(run(x[idx]), y[idx])
        loss.backward()
        peer_recipe.clip(cfg, model)
        opt.step()
        sched.step()
        step += 1
        event("step", step=step, world=world)
        if step % a.ckpt_every == 0 and rank == 0:
            tmp = a.ckpt + ".tmp"
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(),
                        "step": step}, tmp)
            os.replace(tmp, a.ckpt)
            event("checkpoint", step=step)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
