"""The PyTorch DistributedDataParallel peer of a data-parallel strata-train run:
the model, optimizer, schedule, clipping and per-rank batch of a resolved strata
config (JSON of strata-train --dry-run), trained on --world processes over the
gloo backend (loopback), --threads compute threads each, fp32, from in-memory
tensors (peer_data.py, as train_peer.py: PyTorch's best case, no loader).
  ddp_peer.py --config C.json --world 2 --threads 1 --warmup 10 --steps 30 --out R.json
Each global batch is cut into rank slices of data.batch_size, as strata's loader
does (docs/data-parallel.md), so --world 2 with batch 64 is a global batch of 128.
--world 1 trains one process without DDP or a process group: the baseline that
strata-train on one rank is (it makes no gradient sync either).
Writes R.json (rank 0): steady-state samples/s of the global batch over the timed
steps after --warmup untimed ones, and the loss every logging.every_steps steps."""
import time

START = time.time()

import argparse  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import socket  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import peer_data  # noqa: E402
import peer_models  # noqa: E402
import peer_recipe  # noqa: E402


def parse():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", required=True, help="resolved strata config as JSON (data.batch_size per rank)")
    p.add_argument("--world", type=int, default=2, help="processes (ranks)")
    p.add_argument("--threads", type=int, default=1, help="torch compute threads per process")
    p.add_argument("--warmup", type=int, default=10, help="untimed steps first")
    p.add_argument("--steps", type=int, default=30, help="timed steps")
    p.add_argument("--out", required=True)
    return p.parse_args()


def rank_batches(cfg, x, y, rank, world, aug_gen):
    """This rank's slice of every global batch of an endless sequence of epochs;
    the global order (a permutation per epoch from the config's seed) is the same
    on every rank, so the slices partition each global batch."""
    b = cfg["data"]["batch_size"]
    gb = b * world
    order = torch.Generator().manual_seed(cfg["seed"])
    while True:
        perm = torch.randperm(len(x), generator=order)
        for i in range(len(x) // gb):  # data.remainder: drop
            idx = perm[i * gb + rank * b:i * gb + (rank + 1) * b]
            yield peer_data.augment(cfg, x[idx], aug_gen), y[idx]


def train(rank, a, cfg):
    torch.set_num_threads(a.threads)
    if a.world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=a.world)
    torch.manual_seed(cfg["seed"])  # every rank builds the same model; DDP broadcasts rank 0's anyway
    x, y = peer_data.fashion_mnist(cfg, "train")
    model = peer_models.build(cfg, tuple(x.shape[1:]))
    run = model
    if a.world > 1:
        # No per-step buffer collective: strata broadcasts the buffers once at the start
        # and averages BatchNorm statistics at epoch ends only (forward_sync_buffers,
        # newer PyTorch, keeps that first broadcast; broadcast_buffers, older, names the
        # same per-step switch). Buckets keep DDP's defaults (25 MB, a small first one),
        # as strata's BucketOptions.
        ddp = torch.nn.parallel.DistributedDataParallel
        sync = "forward_sync_buffers" if "forward_sync_buffers" in inspect.signature(ddp).parameters \
            else "broadcast_buffers"
        run = ddp(model, **{sync: False})
    opt = peer_recipe.optimizer(cfg, model)
    total = a.warmup + a.steps
    sched = peer_recipe.scheduler(cfg, opt, total)
    batches = rank_batches(cfg, x, y, rank, a.world, torch.Generator().manual_seed(cfg["seed"] * 1000 + rank))
    every = cfg["logging"]["every_steps"]
    gb = cfg["data"]["batch_size"] * a.world
    res = {"model": cfg["model"]["name"], "world": a.world, "threads": a.threads, "batch_per_rank":
           cfg["data"]["batch_size"], "global_batch": gb, "backend": "gloo" if a.world > 1 else "none",
           "torch": torch.__version__, "start": START, "losses": []}
    window, t_timed = [], None
    for k in range(1, total + 1):
        xb, yb = next(batches)
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(run(xb), yb)
        loss.backward()  # DDP: gradients averaged over the ranks when this returns
        peer_recipe.clip(cfg, model)
        opt.step()
        sched.step()
        window.append(loss.item())
        if k == a.warmup:
            t_timed = time.time()
        if k % every == 0:
            res["losses"].append([time.time(), k, sum(window) / len(window)])
            window = []
    t_end = time.time()
    if a.world > 1:
        dist.destroy_process_group()
    if rank == 0:
        res.update(steps=total, timed_steps=a.steps, first_timed_at=t_timed, end=t_end,
                   samples_per_second=a.steps * gb / (t_end - t_timed))
        json.dump(res, open(a.out, "w"), indent=1)
        print(f"ddp {cfg['model']['name']}: {a.world} x {a.threads} thread(s), global batch {gb}, "
              f"{res['samples_per_second']:.1f} samples/s")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    a = parse()
    cfg = json.load(open(a.config))
    if a.world == 1:
        train(0, a, cfg)
        return
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), GLOO_SOCKET_IFNAME="lo",
                      OMP_NUM_THREADS=str(a.threads))
    mp.spawn(train, args=(a, cfg), nprocs=a.world, join=True)


if __name__ == "__main__":
    main()
