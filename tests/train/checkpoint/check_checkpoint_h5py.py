#!/usr/bin/env python3
"""Opens the checkpoint written by checkpoint_h5py_writer with h5py and checks
that it holds what DESIGN.md and docs/training-state.md say: FP32 weights and
optimizer state, trainer counters, loss-scaler state, RNG states, the loader
position, the schedule state and the resolved config as a string.

usage: check_checkpoint_h5py.py CHECKPOINT.h5
"""
import os
import subprocess
import sys

try:
    import h5py
    import numpy as np
except ImportError as e:
    sys.exit("check_checkpoint_h5py.py: the Python module %s is missing from %s, the interpreter running this check "
             "(Debian's python3-h5py brings h5py and numpy; scripts/test.sh installs them for /usr/bin/python3, which CMake's "
             "STRATA_TEST_PYTHON names)" % (e.name, sys.executable))


def text(ds):
    v = ds[()]
    return v.decode("utf-8") if isinstance(v, bytes) else v


def main(path):
    with h5py.File(path, "r") as f:
        assert text_attr(f.attrs["format"]) == "strata-checkpoint", f.attrs["format"]
        assert int(f.attrs["version"]) == 1
        for g in ("model", "optimizer", "trainer", "rng", "config", "loader", "schedule"):
            assert isinstance(f[g], h5py.Group), g

        m = f["model"]
        assert set(m) == {"fc.weight", "fc.bias", "bn.num_batches_tracked"}, set(m)
        assert m["fc.weight"].dtype == np.float32 and m["fc.weight"].shape == (2, 3)
        np.testing.assert_array_equal(m["fc.weight"][()], np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5)
        np.testing.assert_array_equal(m["fc.bias"][()], np.array([-1, 1], dtype=np.float32))
        assert m["bn.num_batches_tracked"].dtype == np.int64 and m["bn.num_batches_tracked"][()] == 7

        o = f["optimizer"]
        assert set(o) == {"fc.weight.exp_avg", "fc.bias.exp_avg"}, set(o)
        assert all(o[k].dtype == np.float32 for k in o)
        np.testing.assert_array_equal(o["fc.weight.exp_avg"][()], np.full((2, 3), 0.25, np.float32))
        np.testing.assert_array_equal(o["fc.bias.exp_avg"][()], np.full((2,), -0.125, np.float32))

        t = f["trainer"]
        ints = {"step": 1234, "epoch": 5, "optimizer_step": 1234, "best_epoch": 4, "patience_counter": 1,
                "scaler_growth_tracker": 17}
        floats = {"best_metric": 0.125, "metric": 0.25, "scaler_scale": 32768.0}
        assert set(t) == set(ints) | set(floats), set(t)
        for k, v in ints.items():
            assert t[k].dtype == np.int64 and t[k].shape == () and t[k][()] == v, (k, t[k][()])
        for k, v in floats.items():
            assert t[k].dtype == np.float64 and t[k][()] == v, (k, t[k][()])

        state = text(f["rng/default"]).split()
        assert len(state) >= 312 and all(s.isdigit() for s in state), "rng/default is not an mt19937_64 state"
        assert text(f["config/resolved_yaml"]) == "model:\n  name: mlp\n"

        lo = f["loader"]
        assert {k: int(lo[k][()]) for k in lo} == {"epoch": 5, "position": 640, "seed": 42}
        assert all(lo[k].dtype == np.int64 for k in lo)

        s = f["schedule"]
        assert text(s["name"]) == "plateau"
        assert {k: float(s[k][()]) for k in s if k != "name"} == {
            "lr": 0.01, "best": 0.125, "num_bad_epochs": 1.0, "cooldown_counter": 0.0}
    print(f"check_checkpoint_h5py: {path} OK")


def text_attr(v):
    return v.decode("utf-8") if isinstance(v, bytes) else str(v)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
