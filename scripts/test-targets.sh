#!/usr/bin/env bash
# Prints the build targets that the CTest tests labelled LABEL run, one a line:
# each test's executable, the program an mpiexec line starts, and every target
# a script test is handed as an argument (a path into the build directory whose
# name is a target: the test binary sts_moto.sh runs, make_golden_checkpoint).
# With --apps, every app too (apps/*.cpp and strata-bench): tests that are
# handed the bin/ directory start them by name. Lets a second build directory
# (the sanitizer builds) compile what one label needs instead of the whole tree.
#   scripts/test-targets.sh BUILD_DIR LABEL [--apps]
set -euo pipefail
build=$1 label=$2 apps=${3:-}
root=$(cd "$(dirname "$0")/.." && pwd)
# every target the build directory can build ("... name" lines, Makefiles or Ninja)
known=$(cmake --build "$build" --target help 2>/dev/null | sed -n 's/^\.\.\. \([^ ]*\).*/\1/p; s/^\([^ :]*\): .*/\1/p' | sort -u)
ctest --test-dir "$build" -L "$label" --show-only=json-v1 | python3 -c '
import json, os, sys
build = os.path.realpath(sys.argv[1])
known = set(sys.argv[2].split())
targets = set()
for t in json.load(sys.stdin)["tests"]:
    # before the first build ctest names no command for a test whose executable
    # is a target: the executable is named as the test, or as its longest prefix at an
    # underscore that is a target (fuzz_X_replay runs fuzz_X,
    # test_op_table_cuda_sim_races runs test_op_table_cuda_sim)
    if "command" not in t:
        name = t["name"]
        cand = name
        while cand not in known and "_" in cand:
            cand = cand.rsplit("_", 1)[0]
        targets.add(cand if cand in known else name)
        continue
    for arg in t["command"]:
        if arg.startswith("-"):
            continue
        # a target lives in the build directory; scripts, python3, mpiexec, data do not
        path = os.path.realpath(arg) if "/" in arg else ""
        if path.startswith(build + "/") and os.path.basename(arg) in known:
            targets.add(os.path.basename(arg))
print("\n".join(sorted(targets)))
' "$build" "$known"
if [ "$apps" = --apps ]; then
  for app in "$root"/apps/*.cpp; do basename "$app" .cpp; done
  echo strata-bench
fi
