"""Independent checks of a strata-train run directory with other people's readers:
TensorBoard's own event reader for the scalars, h5py for checkpoints and shards.

usage: check_run.py RUN_DIR SHARD_DIR
When this python lacks them (Debian's has h5py from apt, tensorboard is not
packaged by Debian and its python refuses pip installs, PEP 668), reruns itself
in a venv under /tmp/strata-tensorboard-venv with both pip-installed there.
"""
import glob
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures"))
import torch_venv  # noqa: E402


def main():
    run_dir, shard_dir = sys.argv[1], sys.argv[2]
    torch_venv.ensure("/tmp/strata-tensorboard-venv", ["h5py", "tensorboard"], ["h5py", "tensorboard"])
    import h5py
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    ea = EventAccumulator(os.path.join(run_dir, "tensorboard"))
    ea.Reload()
    tags = ea.Tags()["scalars"]
    for t in ("train/loss", "train/lr", "val/accuracy", "epoch/train_loss"):
        assert t in tags, f"TensorBoard has no scalar {t}; has {tags}"
    loss = ea.Scalars("train/loss")
    assert len(loss) >= 2 and all(e.step > 0 for e in loss), "train/loss has too few events"
    assert loss[-1].value < loss[0].value, f"train/loss did not fall: {loss[0].value} -> {loss[-1].value}"
    print(f"tensorboard: {len(tags)} scalar tags, train/loss {loss[0].value:.3f} -> {loss[-1].value:.3f} "
          f"over {len(loss)} events")

    ckpts = sorted(glob.glob(os.path.join(run_dir, "checkpoints", "step-*.h5")))
    assert ckpts, "no checkpoint"
    with h5py.File(ckpts[-1], "r") as f:
        for g in ("model", "optimizer", "trainer", "rng", "config", "loader", "schedule"):
            assert g in f, f"{ckpts[-1]}: no group /{g}"
        w = f["model"]["0.weight"] if "0.weight" in f["model"] else f["model"]["1.weight"]
        assert w.dtype == "float32" and len(w.shape) == 2, f"weight {w.dtype} {w.shape}"
        step = int(f["trainer"]["step"][()])
        assert step > 0
        yaml_text = f["config"]["resolved_yaml"][()]
        yaml_text = yaml_text.decode() if isinstance(yaml_text, bytes) else yaml_text
        assert "optimizer:" in yaml_text, "resolved config missing"
        assert "epoch" in f["loader"], "loader position missing"
        print(f"checkpoint {os.path.basename(ckpts[-1])}: step {step}, "
              f"{len(f['model'])} model tensors, {len(f['optimizer'])} optimizer tensors")

    shards = sorted(glob.glob(os.path.join(shard_dir, "shard-*.h5")))
    assert shards, "no shard"
    with h5py.File(shards[0], "r") as f:
        img, lab = f["image"], f["label"]
        n = int(f.attrs["samples"])
        assert img.shape == (n, 28, 28) and img.dtype == "uint8", f"image {img.shape} {img.dtype}"
        assert lab.shape == (n,) and lab.dtype == "int64", f"label {lab.shape} {lab.dtype}"
        assert 0 <= lab[()].min() and lab[()].max() <= 9
        print(f"shard {os.path.basename(shards[0])}: {n} samples, image {img.shape} uint8, label int64")
    print("check_run: ok")


if __name__ == "__main__":
    main()
