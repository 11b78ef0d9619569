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
    gaps_file = pathlib.Path(__file__).with_name("not_yet_emulated.txt")
    gaps = {tuple(l.split(":")) for l in gaps_file.read_text().split("\n") if l and not l.startswith("#")}
    missing = [(f, n) for f, n in kernels
               if not ((f, n) in launched or (f.endswith(".cuh") and n in names))]
    bad = 0
    for f, n in missing:
        if (f, n) not in gaps:
            print(f"not launched under the emulator: {n} (kernels/cuda/{f})")
            bad += 1
    for f, n in sorted(gaps - set(missing)):
        why = "is launched now: take it off" if (f, n) in kernels else "is no kernel of kernels/cuda"
        print(f"not_yet_emulated.txt: {f}:{n} {why}")
        bad += 1
    print(f"{len(kernels) - len(missing)} of {len(kernels)} __global__ kernels in kernels/cuda "
          f"launched under the emulator; {len(missing)} listed as not yet emulated")
    return 1 if bad or not kernels else 0


if __name__ == "__main__":
    sys.exit(main())
