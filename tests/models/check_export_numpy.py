#!/usr/bin/env python3
"""strata-export read by Hugging Face's own safetensors package (numpy backend).

The PyTorch golden GPT's weights (tests/fixtures/gpt_golden.bin) go into a strata
checkpoint (make_golden_checkpoint), strata-export writes it as f32 (given the
run directory), f16 and bf16 (given the file), and safetensors.numpy.load_file
must give, for f32 and f16, exactly the golden parameters under exactly PyTorch's
names and shapes (the golden weights are float16 values, so both are exact);
the bf16 file is left for tests/fixtures/check_export_torch.py, numpy having no
bfloat16. The files stay in WORK for that script.

safetensors is imported from this python when it has it, else pip installed
into VENV (with the system site packages, for numpy). When the package index
cannot be reached the test exits 77, which ctest reports as skipped.

usage: check_export_numpy.py MAKE_CHECKPOINT STRATA_EXPORT GOLDEN_BIN WORK VENV
"""
import os
import shutil
import subprocess
import sys

SKIP = 77
NETWORK_ERRORS = ("NewConnectionError", "Failed to establish a new connection", "Name or service not known",
                  "Temporary failure in name resolution", "Network is unreachable", "No route to host")


def base_python():
    """The interpreter a venv was made from (itself outside a venv)."""
    return getattr(sys, "_base_executable", sys.executable)


def ensure_safetensors(venv):
    try:
        import safetensors.numpy  # noqa: F401
        return
    except ImportError as e:
        err = e
    py = os.path.join(venv, "bin", "python")
    if os.path.abspath(sys.executable) == os.path.abspath(py):
        # safetensors.numpy needs numpy too, which the venv takes from the interpreter it was made from
        sys.exit("check_export_numpy.py: import safetensors.numpy still fails in %s (%s), made from %s; "
                 "numpy comes from Debian's python3-numpy for /usr/bin/python3" % (venv, err, base_python()))
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", "--system-site-packages", venv])
    pip = subprocess.run([py, "-m", "pip", "install", "--retries", "2", "--timeout", "30", "safetensors"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if pip.returncode != 0:
        sys.stdout.write(pip.stdout)
        if any(e in pip.stdout for e in NETWORK_ERRORS):
            print("SKIPPED: the package index is unreachable, so safetensors cannot be installed")
            sys.exit(SKIP)
        sys.exit("check_export_numpy.py: pip install safetensors failed (exit %d)" % pip.returncode)
    os.execv(py, [py] + sys.argv)


def run(cmd):
    print("+ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    make_ckpt, export, golden_bin, work, venv = sys.argv[1:]
    ensure_safetensors(venv)
    import numpy as np
    from safetensors import safe_open
    from safetensors.numpy import load_file

    sys.path.insert(0, os.path.dirname(os.path.abspath(golden_bin)))
    import gpt_golden_records

    golden = gpt_golden_records.params(gpt_golden_records.read_records(golden_bin))
    shutil.rmtree(work, ignore_errors=True)
    run_dir = os.path.join(work, "run")
    os.makedirs(os.path.join(run_dir, "checkpoints"))
    ckpt = os.path.join(run_dir, "checkpoints", "ckpt-0.h5")
    run([make_ckpt, golden_bin, ckpt])
    files = {dt: os.path.join(work, "gpt_golden.%s.safetensors" % dt) for dt in ("f32", "f16", "bf16")}
    run([export, "--checkpoint", run_dir, "--out", files["f32"]])
    for dt in ("f16", "bf16"):
        run([export, "--checkpoint", ckpt, "--out", files[dt], "--dtype", dt])

    for dt, np_dtype in (("f32", np.float32), ("f16", np.float16)):
        got = load_file(files[dt])
        assert sorted(got) == sorted(golden), "names differ: only in the file %s, only in PyTorch's %s" % (
            sorted(set(got) - set(golden)), sorted(set(golden) - set(got)))
        for name, want in golden.items():
            t = got[name]
            assert t.dtype == np_dtype, (dt, name, t.dtype)
            assert t.shape == want.shape, (dt, name, t.shape, want.shape)
            assert np.array_equal(t, want.astype(np_dtype)), "%s %s differs from the golden parameter" % (dt, name)
        print("%s: %d tensors equal PyTorch's parameters exactly (%d values)" %
              (dt, len(got), sum(v.size for v in got.values())))

    with safe_open(files["f32"], framework="np") as f:
        meta = f.metadata()
    assert meta["format"] == "pt" and meta["strata.model"] == "gpt", meta
    assert "model:" in meta["strata.config"] and meta["strata.step"] == "0", meta
    print("metadata: format %s, model %s, format version %s, config %d bytes" %
          (meta["format"], meta["strata.model"], meta["strata.format_version"], len(meta["strata.config"])))
    print("check_export_numpy: every check passed")


if __name__ == "__main__":
    main()
