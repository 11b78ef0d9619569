"""bench/torch/peer_schedule.py against strata-train: a short MLP run per
schedule the benchmark's configs use (cosine after a linear warmup, onecycle),
logging every step; the lr logged at step s (the one step s trained with) must
be peer_schedule's lr(s - 1) to 1e-12 relative. Needs python3-yaml.
  test_peer_schedule.py STRATA_TRAIN STRATA_PACK REPO_DIR"""
import json
import os
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError as e:
    sys.exit("test_peer_schedule.py: the Python module %s is missing from %s, the interpreter running this check "
             "(Debian's python3-yaml brings yaml; scripts/test.sh installs them for /usr/bin/python3, which CMake's "
             "STRATA_TEST_PYTHON names)" % (e.name, sys.executable))

train, pack, repo = sys.argv[1:4]
sys.path.insert(0, os.path.join(repo, "bench", "torch"))
import peer_schedule  # noqa: E402

STEPS = 40
CASES = {
    "cosine": ["schedule.warmup_steps=7", "schedule.warmup_start_factor=0.1", "schedule.min_lr=0.0002"],
    "onecycle": ["optimizer.name=sgd", "optimizer.lr=0.1", "schedule.name=onecycle", "schedule.warmup_steps=0",
                 "schedule.pct_start=0.25"],
}
D = "/usr/share/datasets/fashion-mnist"
failures = 0
with tempfile.TemporaryDirectory() as w:
    subprocess.run([pack, "idx", "--images", f"{D}/t10k-images-idx3-ubyte.gz", "--labels",
                    f"{D}/t10k-labels-idx1-ubyte.gz", "--out", f"{w}/data", "--shard-size", "8MiB"],
                   check=True, capture_output=True)
    for name, extra in CASES.items():
        args = [f"{repo}/configs/fashion_mnist_mlp.yaml", f"data.train_url=file://{w}/data", "data.test_url=",
                f"data.cache_dir={w}/cache-{name}", f"trainer.max_steps={STEPS}", "trainer.eval_every_epochs=0",
                "checkpoint.every_epochs=0", "logging.console=off", "logging.tensorboard=false",
                "logging.every_steps=1", "trainer.threads=1", *extra]
        cfg = yaml.safe_load(subprocess.run([train, "--dry-run", "--config", *args], check=True,
                                            capture_output=True, text=True).stdout)
        assert cfg["schedule"]["name"] == name, cfg["schedule"]
        subprocess.run([train, "--config", *args, "--run-dir", f"{w}/run-{name}"], check=True, capture_output=True)
        rows = [json.loads(line) for line in open(f"{w}/run-{name}/metrics.jsonl")]
        logged = {r["step"]: r["lr"] for r in rows if r["kind"] == "train"}
        assert sorted(logged) == list(range(1, STEPS + 1)), sorted(logged)
        lr = peer_schedule.lr_at(cfg, STEPS)
        worst = max(abs(logged[s] - lr(s - 1)) / logged[s] for s in logged)
        ok = worst <= 1e-12
        failures += not ok
        print(f"{name}: {STEPS} steps, worst relative lr difference {worst:.2e}: {'ok' if ok else 'FAILED'}")
        if not ok:
            for s in sorted(logged)[:STEPS]:
                print(f"  step {s}: strata {logged[s]!r} peer {lr(s - 1)!r}")
sys.exit(1 if failures else 0)
