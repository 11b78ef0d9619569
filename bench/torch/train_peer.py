"""The PyTorch peer of one strata-train run: the model, optimizer, schedule,
clipping and batch size of a resolved strata config (JSON of strata-train
--dry-run), trained from in-memory tensors, eager or under torch.compile, on a
fixed number of threads.
  throughput:       train_peer.py --config C.json --mode eager --warmup 5 --steps 40 --out R.json
  time to accuracy: train_peer.py --config C.json --mode eager --target-accuracy 0.91 --out R.json
Writes R.json: steady-state samples/s over the timed steps (after --warmup
untimed ones), the loss every logging.every_steps steps and each epoch's test
accuracy, with unix timestamps (as strata's metrics.jsonl)."""
import time

START = time.time()

import argparse  # noqa: E402
import json  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import peer_data  # noqa: E402
import peer_models  # noqa: E402
import peer_recipe  # noqa: E402


def parse():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", required=True, help="resolved strata config as JSON")
    p.add_argument("--mode", choices=["eager", "compile"], default="eager")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warmup", type=int, default=5, help="untimed steps first (compilation happens here)")
    p.add_argument("--steps", type=int, default=0, help="timed steps; 0 = the config's whole run")
    p.add_argument("--target-accuracy", type=float, default=0.0,
                   help="evaluate on the test set every epoch and stop at the first at or above this")
    p.add_argument("--corpus", default="build/corpus/kjv.txt", help="text of the GPT's byte tokens")
    p.add_argument("--out", required=True)
    return p.parse_args()


class Data:
    def __init__(self, cfg, corpus):
        self.cfg, self.lm = cfg, cfg["model"]["name"] == "gpt"
        if self.lm:
            self.rows = peer_data.corpus_windows(corpus, cfg["model"]["context"])
            self.n = len(self.rows)
        else:
            self.x, self.y = peer_data.fashion_mnist(cfg, "train")
            self.n = len(self.x)
        self.batch = cfg["data"]["batch_size"]
        self.steps_per_epoch = self.n // self.batch  # data.remainder: drop
        self.gen = torch.Generator().manual_seed(cfg["seed"])

    def epoch(self):
        perm = torch.randperm(self.n, generator=self.gen)
        for i in range(self.steps_per_epoch):
            idx = perm[i * self.batch:(i + 1) * self.batch]
            if self.lm:
                r = self.rows[idx]
                yield r[:, :-1], r[:, 1:]
            else:
                yield peer_data.augment(self.cfg, self.x[idx], self.gen), self.y[idx]


def evaluate(model, cfg):
    x, y = peer_data.fashion_mnist(cfg, "test")
    model.eval()
    correct, loss = 0, 0.0
    with torch.no_grad():
        for i in range(0, len(x), cfg["data"]["batch_size"]):
            out = model(x[i:i + cfg["data"]["batch_size"]])
            yb = y[i:i + cfg["data"]["batch_size"]]
            loss += F.cross_entropy(out, yb, reduction="sum").item()
            correct += (out.argmax(1) == yb).sum().item()
    model.train()
    return correct / len(x), loss / len(x)


def main():
    a = parse()
    cfg = json.load(open(a.config))
    torch.set_num_threads(a.threads)
    torch.manual_seed(cfg["seed"])
    data = Data(cfg, a.corpus)
    model = peer_models.build(cfg, (1, 28, 28))
    opt = peer_recipe.optimizer(cfg, model)
    epochs, max_steps = cfg["trainer"]["epochs"], cfg["trainer"]["max_steps"]
    total = epochs * data.steps_per_epoch
    if max_steps > 0:
        total = min(total, max_steps)
    if a.steps > 0:
        total = a.warmup + a.steps
    sched = peer_recipe.scheduler(cfg, opt, total)
    run = torch.compile(model) if a.mode == "compile" else model
    vocab = cfg["model"].get("vocab_size", 0)

    def step(xb, yb):
        opt.zero_grad(set_to_none=True)
        out = run(xb)
        loss = F.cross_entropy(out.reshape(-1, vocab), yb.reshape(-1)) if data.lm else F.cross_entropy(out, yb)
        loss.backward()
        peer_recipe.clip(cfg, model)
        opt.step()
        sched.step()
        return loss.item()

    every = cfg["logging"]["every_steps"]
    res = {"mode": a.mode, "model": cfg["model"]["name"], "threads": a.threads, "batch": data.batch,
           "torch": torch.__version__, "start": START, "losses": [], "evals": []}
    k, window, t_timed, reached = 0, [], None, False
    for epoch in range(10**9 if a.steps > 0 else epochs):
        for xb, yb in data.epoch():
            window.append(step(xb, yb))
            k += 1
            if k == a.warmup:
                t_timed = time.time()
                res["first_timed_at"] = t_timed
            if k % every == 0:
                res["losses"].append([time.time(), k, sum(window) / len(window)])
                window = []
            if k >= total:
                break
        if a.target_accuracy > 0:
            acc, loss = evaluate(run, cfg)
            res["evals"].append([time.time(), epoch + 1, acc, loss])
            print(f"epoch {epoch + 1}: test accuracy {acc:.4f} loss {loss:.4f}", flush=True)
            json.dump(res, open(a.out, "w"), indent=1)  # so far: a run cut short still tells how far it got
            if acc >= a.target_accuracy:
                reached = True
                break
        if k >= total:
            break
    t_end = time.time()
    if a.steps > 0:
        res["timed_steps"] = k - a.warmup
        res["samples_per_second"] = (k - a.warmup) * data.batch / (t_end - t_timed)
    res.update(steps=k, end=t_end, reached=reached)
    json.dump(res, open(a.out, "w"), indent=1)
    print(f"{a.mode} {cfg['model']['name']}: {k} steps, "
          f"{res.get('samples_per_second', 0):.1f} samples/s, last loss {res['losses'][-1][2] if res['losses'] else 0:.4f}")


if __name__ == "__main__":
    main()
