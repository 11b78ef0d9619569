#!/usr/bin/env python3
"""Token shards read by h5py, as a user would: packs a small text with
strata-pack tokens, then checks that h5py's 1-D token arrays, in manifest order,
are the text's bytes, split at the end, and that the manifest's counts, sizes,
checksums' file sizes and vocabulary agree with the files.
usage: check_tokens_h5py.py STRATA_PACK SCRATCH_DIR
       check_tokens_h5py.py --corpus TEXT OUT VAL_FRACTION  (a corpus packed before)"""
import json
import math
import os
import shutil
import subprocess
import sys

try:
    import h5py
    import numpy as np
except ImportError as e:
    sys.exit("check_tokens_h5py.py: the Python module %s is missing from %s, the interpreter running this check "
             "(Debian's python3-h5py brings h5py and numpy; scripts/test.sh installs them for /usr/bin/python3, which CMake's "
             "STRATA_TEST_PYTHON names)" % (e.name, sys.executable))


def dataset_tokens(d):
    m = json.load(open(os.path.join(d, "manifest.json")))
    assert m["vocab_size"] == 256, m
    assert m["schema"] == [{"name": "tokens", "dtype": "u16", "shape": [], "variable": False}], m["schema"]
    parts = []
    for s in m["shards"]:
        p = os.path.join(d, s["name"])
        assert os.path.getsize(p) == s["bytes"], s
        with h5py.File(p, "r") as f:
            t = f["tokens"][...]
            assert t.dtype == np.uint16 and t.ndim == 1, (t.dtype, t.shape)
            assert len(t) == s["samples"] == f.attrs["samples"], s
            parts.append(t)
    return np.concatenate(parts) if parts else np.zeros(0, np.uint16), m


def check_split(text, out, val_fraction):
    """train/ then val/ in out hold exactly the bytes of text, split at the end."""
    train, mt = dataset_tokens(os.path.join(out, "train"))
    val, _ = dataset_tokens(os.path.join(out, "val"))
    n_val = math.floor(len(text) * val_fraction + 0.5)  # C++ llround: halves away from zero
    assert len(val) == n_val and len(train) == len(text) - n_val, (len(train), len(val))
    got = np.concatenate([train, val])
    want = np.frombuffer(text, dtype=np.uint8).astype(np.uint16)
    assert np.array_equal(got, want), "token stream differs from the text's bytes"
    print("token shards read by h5py: %d train + %d val tokens, %d train shards" %
          (len(train), len(val), len(mt["shards"])))
    return mt


def main():
    if sys.argv[1] == "--corpus":  # check_tokens_h5py.py --corpus TEXT OUT VAL_FRACTION
        check_split(open(sys.argv[2], "rb").read(), sys.argv[3], float(sys.argv[4]))
        return
    pack, scratch = sys.argv[1], sys.argv[2]
    os.makedirs(scratch, exist_ok=True)
    text = ("Tokens are bytes here: caf\u00e9, na\u00efve, \u65e5\u672c.\n" * 300).encode("utf-8")
    src = os.path.join(scratch, "text.txt")
    open(src, "wb").write(text)
    out = os.path.join(scratch, "out")
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([pack, "tokens", "--text", src, "--out", out, "--shard-size", "4KiB",
                    "--val-fraction", "0.1", "--quiet"], check=True)
    mt = check_split(text, out, 0.1)
    assert len(mt["shards"]) > 1, mt["shards"]


if __name__ == "__main__":
    main()
