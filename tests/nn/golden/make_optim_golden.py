#!/usr/bin/env python3
"""Writes optim_golden.json: PyTorch SGD/AdamW trajectories for the C++ optimizer test.

Each case fixes initial FP32 parameters and, per step, FP32 gradients (drawn once
from a seeded torch generator), runs torch.optim on them and records every
parameter after every step. tests/nn/test_optim_golden.cpp replays the same
gradients through strata's optimizers and compares. Regenerate with:
    python3 tests/nn/golden/make_optim_golden.py
(installs the CPU build of torch if it is missing). The output is committed so the
C++ test never needs torch.
"""
import json
import os
import subprocess
import sys


def ensure_torch():
    try:
        import torch  # noqa: F401
        return
    except ImportError:
        pass
    for extra in (["--index-url", "https://download.pytorch.org/whl/cpu"], []):
        if subprocess.call([sys.executable, "-m", "pip", "install", "torch"] + extra) == 0:
            return
    sys.exit("make_optim_golden.py: could not install torch")


ensure_torch()
import torch  # noqa: E402

STEPS = 12
SHAPES = {"w": [3, 4], "b": [4]}

CASES = [
    ("sgd_plain", "sgd", dict(lr=0.1)),
    ("sgd_momentum", "sgd", dict(lr=0.05, momentum=0.9)),
    ("sgd_momentum_dampening", "sgd", dict(lr=0.05, momentum=0.9, dampening=0.3)),
    ("sgd_nesterov", "sgd", dict(lr=0.05, momentum=0.9, nesterov=True)),
    ("sgd_weight_decay", "sgd", dict(lr=0.1, momentum=0.5, weight_decay=0.01)),
    ("adamw", "adamw", dict(lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)),
    ("adamw_strong_decay", "adamw", dict(lr=0.003, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
]
# lr changed between steps (as a schedule would), applied before step i
LR_CHANGES = {"sgd_momentum": {6: 0.02}, "adamw": {6: 0.004}}
# steps (0-based) on which parameter "b" gets no gradient: it must be skipped
SKIP_B = {"sgd_momentum": [3], "adamw": [2, 7]}


def floats(t):
    return [float(x) for x in t.detach().reshape(-1).tolist()]


def run_case(name, kind, hp, gen):
    params = {k: torch.randn(s, generator=gen, dtype=torch.float32).requires_grad_() for k, s in SHAPES.items()}
    init = {k: floats(p) for k, p in params.items()}
    grads = [{k: torch.randn(s, generator=gen, dtype=torch.float32) for k, s in SHAPES.items()} for _ in range(STEPS)]
    plist = list(params.values())
    opt = torch.optim.SGD(plist, **hp) if kind == "sgd" else torch.optim.AdamW(plist, **hp)
    traj, grad_record, lrs = [], [], []
    for i in range(STEPS):
        if i in LR_CHANGES.get(name, {}):
            for g in opt.param_groups:
                g["lr"] = LR_CHANGES[name][i]
        lrs.append(opt.param_groups[0]["lr"])
        rec = {}
        for k, p in params.items():
            if k == "b" and i in SKIP_B.get(name, []):
                p.grad = None
                rec[k] = None
            else:
                p.grad = grads[i][k].clone()
                rec[k] = floats(grads[i][k])
        opt.step()
        grad_record.append(rec)
        traj.append({k: floats(p) for k, p in params.items()})
    hp_out = dict(hp)
    if "betas" in hp_out:
        hp_out["beta1"], hp_out["beta2"] = hp_out.pop("betas")
    return {"name": name, "optimizer": kind, "hyper": hp_out, "shapes": SHAPES, "init": init,
            "lr": lrs, "grads": grad_record, "params": traj}


def main():
    gen = torch.Generator().manual_seed(1234)
    out = {"torch_version": torch.__version__, "steps": STEPS,
           "cases": [run_case(n, k, hp, gen) for n, k, hp in CASES]}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optim_golden.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print("wrote", path, "with", len(out["cases"]), "cases from torch", torch.__version__)


if __name__ == "__main__":
    main()
