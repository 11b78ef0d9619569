#!/usr/bin/env python3
"""The test tree mirrors the source tree, with one naming scheme
(docs/architecture.md, "Tests"):

- every folder under tests/ is a source folder's mirror (tests/core for core/,
  tests/data/loader for data/loader/, tests/kernels/cuda for kernels/cuda/, ...)
  or one of the suite's own kinds below;
- a test source is named test_<what>.cpp (no <what>_test.cpp);
- a GPU test is a label (LABELS gpu), never a folder.

Exit status 1 names each offender.
"""
import pathlib
import sys

# suites of the whole program (reliability, multinode: two network-namespace
# "nodes"), the suite's own machinery and data (simt: the host SIMT emulator the
# kernel tests run CUDA kernels on), not one source folder's
KINDS = {"architecture", "reliability", "multinode", "fuzz", "bench", "fixtures", "support", "simt"}
MIRRORS = {"apps": "apps"}  # tests/apps: the programs of apps/


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    tests = root / "tests"
    bad = []
    for d in sorted(p for p in tests.rglob("*") if p.is_dir()):
        rel = d.relative_to(tests)
        top = rel.parts[0]
        if top in KINDS:
            continue
        if "gpu" in rel.parts:
            bad.append(f"tests/{rel}: a GPU test is a label (LABELS gpu), not a folder")
            continue
        mirror = root / MIRRORS.get(top, top) / pathlib.Path(*rel.parts[1:])
        if not mirror.is_dir() and (d / "CMakeLists.txt").exists():
            bad.append(f"tests/{rel}: mirrors no source folder ({mirror.relative_to(root)} does not exist)")
    for f in sorted(tests.rglob("*_test.cpp")):
        bad.append(f"{f.relative_to(root)}: name it test_{f.stem[:-5]}.cpp")
    for b in bad:
        print(b)
    print(f"check_test_tree: {len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
