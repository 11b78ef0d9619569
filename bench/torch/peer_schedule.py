"""strata's learning-rate schedules (nn/schedule) as plain Python, for the
PyTorch peer (through LambdaLR) and for tests/bench/test_peer_schedule.py, which
checks them against the lr strata-train logs at every step: cosine and linear
after strata's linear warmup, onecycle without momentum cycling (strata cycles
only the lr), constant with warmup."""
import math


def _warmup_factor(step, warmup, start):
    return 1.0 if step >= warmup else start + (1.0 - start) * step / warmup


def lr_at(cfg, total_steps):
    """lr(step) of strata's schedule spanning `total_steps` (nn/schedule)."""
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
    raise SystemExit(f"peer_schedule: no peer for schedule.name '{s['name']}'")
