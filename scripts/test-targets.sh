#!/usr/bin/env bash
# Prints the build targets that the CTest tests labelled LABEL run, one a line:
# each test's executable, or the program an mpiexec line starts (tests that are
# scripts are left out: what they run is theirs to name). With --apps, every
# app (apps/*.cpp) too: unit tests start strata-pack, strata-proxy and
# strata-generate. Lets a second build directory (the sanitizer builds) compile
# what one label needs instead of the whole tree.
#   scripts/test-targets.sh BUILD_DIR LABEL [--apps]
set -euo pipefail
build=$1 label=$2 apps=${3:-}
root=$(cd "$(dirname "$0")/.." && pwd)
ctest --test-dir "$build" -L "$label" --show-only=json-v1 | python3 -c '
import json, os, sys
targets = set()
build = os.path.realpath(sys.argv[1])
for t in json.load(sys.stdin)["tests"]:
    # before the first build ctest knows no path yet: the executable is named as the test
    cmd = t.get("command") or [t["name"]]
    if os.path.basename(cmd[0]).startswith(("mpiexec", "mpirun")):
        cmd = [c for c in cmd[1:] if not c.startswith("-") and not c.isdigit()]
    # a built program lives in the build directory (or is not placed yet); a
    # script of the source tree (the rgw fixture script, bash, python3) is no target
    if cmd and ("/" not in cmd[0] or os.path.realpath(cmd[0]).startswith(build + "/")):
        name = os.path.basename(cmd[0])
        if "command" not in t and name.endswith("_replay"):
            name = name[: -len("_replay")]  # fuzz_X_replay runs the target fuzz_X
        targets.add(name)
print("\n".join(sorted(targets)))
' "$build"
if [ "$apps" = --apps ]; then
  for app in "$root"/apps/*.cpp; do basename "$app" .cpp; done
fi
