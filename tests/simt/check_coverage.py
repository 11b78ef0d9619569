#!/usr/bin/env python3
"""Every __global__ kernel of kernels/cuda is launched under the host SIMT
emulator by some test.

The emulated tests append each kernel they launch, as "launch-site-file:kernel",
to a file in LOG_DIR (STRATA_SIMT_LAUNCH_LOG). A kernel defined in a .cu file
counts as launched when that file's launcher launched it (two files may each
have a kernel of the same name); one defined in a .cuh header, when any file
launched it. Exit status 1 lists the kernels never launched.

  usage: check_coverage.py SOURCE_DIR LOG_DIR
"""
import pathlib
import re
import sys

GLOBAL = re.compile(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\s*\(")


def main():
    src, logs = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    kernels = []
    for f in sorted((src / "kernels" / "cuda").glob("*.cu*")):
        for name in GLOBAL.findall(f.read_text()):
            kernels.append((f.name, name))
    launched = set()
    for log in sorted(logs.glob("*.txt")) if logs.is_dir() else []:
        for line in log.read_text().split():
            site, _, name = line.partition(":")
            launched.add((site, name))
    names = {n for _, n in launched}
    missing = [(f, n) for f, n in kernels
               if not ((f, n) in launched or (f.endswith(".cuh") and n in names))]
    for f, n in missing:
        print(f"not launched under the emulator: {n} (kernels/cuda/{f})")
    print(f"{len(kernels) - len(missing)} of {len(kernels)} __global__ kernels in kernels/cuda "
          f"launched under the emulator")
    return 1 if missing or not kernels else 0


if __name__ == "__main__":
    sys.exit(main())
