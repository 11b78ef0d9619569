"""The optimizer, learning-rate schedule and clipping of a resolved strata config,
in PyTorch: torch.optim's SGD and AdamW with strata's options and decay groups,
the schedule of peer_schedule.py through LambdaLR, clip_grad_norm_."""
import torch

from peer_models import no_decay_names
from peer_schedule import lr_at


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


def scheduler(cfg, opt, total_steps):
    lr = lr_at(cfg, total_steps)
    base = cfg["optimizer"]["lr"]
    return torch.optim.lr_scheduler.LambdaLR(opt, lambda k: lr(k) / base)


def clip(cfg, model):
    max_norm = cfg["clipping"]["max_norm"]
    if max_norm > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
