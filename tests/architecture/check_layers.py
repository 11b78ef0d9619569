#!/usr/bin/env python3
"""Arrows point down: a source file of one floor includes only its own floor's
headers and those of the floors below it (docs/architecture.md).

    apps, bench  ->  models | distributed | data  ->  train  ->  nn  ->  core  ->  kernels  ->  base

models, distributed and data share a floor and do not include each other. The
check reads every `#include "..."` of every .h/.cpp/.cu/.cuh file under the
library folders; a file it cannot classify is an error, so a new top-level
folder needs a floor here before it builds. Exit status 1 names each offending
line as FILE:LINE: FLOOR includes HEADER (FLOOR).
"""
import pathlib
import re
import sys

FLOORS = {"base": 0, "kernels": 1, "core": 2, "nn": 3, "train": 4,
          "models": 5, "distributed": 5, "data": 5}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SUFFIXES = {".h", ".cpp", ".cu", ".cuh"}


def floor_of(path: str):
    top = path.split("/", 1)[0]
    return top if top in FLOORS else None


def violations(root: pathlib.Path):
    found = []
    for lib in FLOORS:
        for f in sorted((root / lib).rglob("*")):
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
                if FLOORS[target] >= FLOORS[lib]:
                    found.append(f"{rel}:{n}: {lib} includes {inc} ({target}): arrows point down only")
    return found


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    missing = [lib for lib in FLOORS if not (root / lib).is_dir()]
    if missing:
        print(f"check_layers: no folder {', '.join(missing)} under {root}")
        return 1
    bad = violations(root)
    for b in bad:
        print(b)
    counted = sum(1 for lib in FLOORS for f in (root / lib).rglob("*") if f.suffix in SUFFIXES)
    print(f"check_layers: {counted} files on {len(FLOORS)} floors, {len(bad)} upward includes")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
