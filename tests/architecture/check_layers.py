#!/usr/bin/env python3
"""Arrows point down: a source file of one floor includes only its own floor's
headers and those of the floors below it (docs/architecture.md).

    apps, bench  ->  models | distributed | data  ->  train  ->  nn  ->  core  ->  kernels  ->  base

kernels/runtime (devices, dtypes, views, allocators, the copy engine, the
thread pool, half types, dispatch) is the floor under the kernels themselves.
models, distributed and data share a floor and do not include each other; data
has three floors of its own, store (the object-store client) -> format (shards,
manifests, packing) -> loader, where loader -> format -> store. The
check reads every `#include "..."` of every .h/.cpp/.cu/.cuh file under the
library folders; a file it cannot classify is an error, so a new top-level
folder needs a floor here before it builds. Exit status 1 names each offending
line as FILE:LINE: FLOOR includes HEADER (FLOOR).
"""
import pathlib
import re
import sys

FLOORS = {"base": (0,), "kernels/runtime": (1, 0), "kernels": (1, 1), "core": (2,), "nn": (3,), "train": (4,),
          "models": (5,), "distributed": (5,),
          "data/store": (5, 0), "data/format": (5, 1), "data/loader": (5, 2)}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SUFFIXES = {".h", ".cpp", ".cu", ".cuh"}


def floor_of(path: str):
    for name in sorted(FLOORS, key=len, reverse=True):  # data/store before data
        if path.startswith(name + "/"):
            return name
    return None


def points_up(lib: str, target: str) -> bool:
    a, b = FLOORS[lib], FLOORS[target]
    if a[0] == b[0] and lib.split("/")[0] != target.split("/")[0]:
        return True  # siblings on one floor (models, distributed, data)
    return b >= a


def violations(root: pathlib.Path):
    found = []
    for lib in FLOORS:
        for f in sorted((root / lib).rglob("*")):
            if floor_of(f.relative_to(root).as_posix()) != lib:
                continue  # a deeper floor's file (kernels/runtime/ under kernels/)
            if f.suffix not in SUFFIXES or not f.is_file():
                continue
            rel = f.relative_to(root).as_posix()
            for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                inc = m.group(1)
                if (f.parent / inc).exists():  # beside the including file: its own floor
                    continue
                target = floor_of(inc)
                if target is None:
                    if (root / inc).exists():
                        found.append(f"{rel}:{n}: {lib} includes {inc}, which is on no floor")
                    continue  # a generated header or a third-party one found on the include path
                if target == lib:
                    continue
                if points_up(lib, target):
                    found.append(f"{rel}:{n}: {lib} includes {inc} ({target}): arrows point down only")
    return found


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    missing = [lib for lib in FLOORS if not (root / lib).is_dir()]
    stray = [p.name for p in (root / "data").iterdir() if p.is_file() and p.suffix in SUFFIXES]
    if stray:
        print(f"check_layers: data/ holds {', '.join(sorted(stray))} outside its three floors")
        return 1
    if missing:
        print(f"check_layers: no folder {', '.join(missing)} under {root}")
        return 1
    bad = violations(root)
    for b in bad:
        print(b)
    counted = sum(1 for lib in FLOORS for f in (root / lib).rglob("*")
                  if f.suffix in SUFFIXES and floor_of(f.relative_to(root).as_posix()) == lib)
    print(f"check_layers: {counted} files on {len(FLOORS)} floors, {len(bad)} upward includes")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
