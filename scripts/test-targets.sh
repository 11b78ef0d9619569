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
for t in json.load(sys.stdin)["tests"]:
    # before the first build ctest knows no path yet: the executable is named as the test
    cmd = [os.path.basename(c) for c in (t.get("command") or [t["name"]])]
    if cmd[0].startswith(("mpiexec", "mpirun")):
        cmd = [c for c in cmd[1:] if not c.startswith("-") and not c.isdigit()]
    if cmd and cmd[0] not in ("bash", "sh", "python3", "env"):
        targets.add(cmd[0])
print("\n".join(sorted(targets)))
'
if [ "$apps" = --apps ]; then
  for app in "$root"/apps/*.cpp; do basename "$app" .cpp; done
fi
