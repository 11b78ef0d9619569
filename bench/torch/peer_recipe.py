"""The optimizer, learning-rate schedule and clipping of a resolved strata config,
in PyTorch: the same formulas as core/optim and core/schedule (cosine and linear
with strata's linear warmup, onecycle without momentum cycling, constant), so
that both sides take the same steps."""
import math

import torch

from peer_models import no_decay_names


def optimizer(cfg, model):
    o = cfg["optimizer"]
    if o["name"] == "sgd":  # L2 weight decay on every parameter, as strata's SGD
        return torch.optim.SGD(model.parameters(), lr=o["lr"], momentum=o["momentum"],
                               dampening=o["dampening"], weight_decay=o["weight_decay"],
                               nesterov=o["nesterov"])
    if o["name"] == "adamw":
        params = list(model.named_parameters())
        if o["decay_groups"]:
            exempt = no_decay_names(model)
            groups = [{"params": [p for n, p in params if n not in exempt], "weight_decay": o["weight_decay"]},
                      {"params": [p for n, p in params if n in exempt], "weight_decay": 0.0}]
        else:
            groups = [{"params": [p for _, p in params], "weight_decay": o["weight_decay"]}]
        return torch.optim.AdamW(groups, lr=o["lr"], betas=(o["beta1"], o["beta2"]), eps=o["eps"])
    raise SystemExit(f"peer_recipe: no PyTorch peer for optimizer.name '{o['name']}'")


def _warmup_factor(step, warmup, start):
    return 1.0 if step >= warmup else start + (1.0 - start) * step / warmup


def lr_at(cfg, total_steps):
    """lr(step) of strata's schedule spanning `total_steps` (core/schedule)."""
    s, base = cfg["schedule"], cfg["optimizer"]["lr"]
    total = s["total_steps"] if s["total_steps"] > 0 else total_steps
    warm, start, min_lr = s["warmup_steps"], s["warmup_start_factor"], s["min_lr"]

    def decay(step):
        return min(step - warm, total - warm) / (total - warm)

    if s["name"] == "cosine":
        return lambda k: base * _warmup_factor(k, warm, start) if k < warm else \
            min_lr + (base - min_lr) * 0.5 * (1.0 + math.cos(math.pi * decay(k)))
    if s["name"] == "linear":
        return lambda k: base * _warmup_factor(k, warm, start) if k < warm else \
            base + (min_lr - base) * decay(k)
    if s["name"] == "onecycle":
        peak = s["max_lr"] if s["max_lr"] > 0 else base
        first = peak / s["div_factor"]
        last = first / s["final_div_factor"]
        end1, end2 = s["pct_start"] * total - 1.0, total - 1.0

        def anneal(a, b, pct):
            return b + (a - b) / 2.0 * (math.cos(math.pi * pct) + 1.0)

        def one_cycle(k):
            k = min(float(k), end2)
            return anneal(first, peak, k / end1) if k <= end1 else anneal(peak, last, (k - end1) / (end2 - end1))
        return one_cycle
    if s["name"] == "constant":
        return lambda k: base * _warmup_factor(k, warm, start)
    raise SystemExit(f"peer_recipe: no PyTorch peer for schedule.name '{s['name']}'")


def scheduler(cfg, opt, total_steps):
    lr = lr_at(cfg, total_steps)
    base = cfg["optimizer"]["lr"]
    return torch.optim.lr_scheduler.LambdaLR(opt, lambda k: lr(k) / base)


def clip(cfg, model):
    max_norm = cfg["clipping"]["max_norm"]
    if max_norm > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
