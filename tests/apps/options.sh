#!/usr/bin/env bash
# Every strata binary's command line (CLI11): --version prints the strata
# version and the git commit of the source tree it was built from, --help
# prints a usage and exits 0, an unknown option is an error (exit 2) that names
# it, and `--config=FILE` reads the same config as `--config FILE`.
#   usage: options.sh BIN_DIR SOURCE_DIR
set -euo pipefail
BIN=$1
SRC=$2
W=$(mktemp -d /tmp/strata-cli-options.XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

version=$(sed -n 's/^project(strata VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
in_git=$(git -C "$SRC" rev-parse --is-inside-work-tree 2>/dev/null || echo false)
for b in strata-train strata-pack strata-bench strata-export strata-generate strata-proxy strata-config-docs strata-elastic \
         strata-inspect; do
  [ -x "$BIN/$b" ] || fail "$BIN/$b is not built"
  out=$("$BIN/$b" --version) || fail "$b --version exited with $?"
  # the commit the binary was built from (HEAD then, which may be older than HEAD
  # now), -dirty when the tree had changes; "unknown" outside a git checkout
  [[ "$out" =~ ^strata\ $version\ \(git\ ([0-9a-f]{12,40}|unknown)(-dirty)?\)$ ]] ||
    fail "$b --version printed '$out', expected 'strata $version (git <12 hex digits>[-dirty])'"
  built=${BASH_REMATCH[1]}
  if [ "$in_git" = true ]; then
    git -C "$SRC" cat-file -e "$built^{commit}" 2>/dev/null ||
      fail "$b was built from '$built', not a commit of $SRC"
  else
    [ "$built" = unknown ] || fail "$b names commit $built, but $SRC is not a git checkout"
  fi
  "$BIN/$b" --help >"$W/help" || fail "$b --help exited with $?"
  grep -q "^Usage: " "$W/help" || fail "$b --help has no usage line: $(head -3 "$W/help")"
  grep -q -- "--version" "$W/help" || fail "$b --help does not list --version"
  rc=0
  "$BIN/$b" --no-such-option 2>"$W/err" >/dev/null || rc=$?
  [ $rc -eq 2 ] || fail "$b --no-such-option exited with $rc, expected 2: $(cat "$W/err")"
  grep -q -- "--no-such-option" "$W/err" || fail "$b's error does not name the option: $(cat "$W/err")"
  echo "$b: '$out'; --help; $(head -1 "$W/err")"
done

# A subcommand's or a benchmark's unknown option is named too, and usage errors of strata-train's own.
rc=0
"$BIN/strata-pack" idx --images a --labels b --out "$W/o" --bogus 1 2>"$W/err" || rc=$?
[ $rc -eq 2 ] && grep -q -- "--bogus" "$W/err" || fail "strata-pack idx --bogus: exit $rc, $(cat "$W/err")"
for bench in allreduce gemm loader train-step; do
  rc=0
  "$BIN/strata-bench" $bench --bogus 1 2>"$W/err" >/dev/null || rc=$?
  [ $rc -eq 2 ] && grep -q -- "--bogus" "$W/err" || fail "strata-bench $bench --bogus: exit $rc, $(cat "$W/err")"
  "$BIN/strata-bench" $bench --help >"$W/help" || fail "strata-bench $bench --help exited with $?"
  grep -q "^Usage: strata-bench $bench " "$W/help" || fail "strata-bench $bench --help: $(head -3 "$W/help")"
done
rc=0
"$BIN/strata-train" --config "$SRC/configs/fashion_mnist_mlp.yaml" optimizer.lr 2>"$W/err" || rc=$?
[ $rc -eq 2 ] && grep -q "expected key=value, got 'optimizer.lr'" "$W/err" ||
  fail "an override without '=': exit $rc, $(cat "$W/err")"
rc=0
"$BIN/strata-train" optimizer.lr=0.1 2>"$W/err" || rc=$?
[ $rc -eq 2 ] && grep -q -- "--config is required" "$W/err" || fail "no --config: exit $rc, $(cat "$W/err")"

# --config=FILE and --config FILE, with an override, resolve to the same config.
CFG=$SRC/configs/fashion_mnist_mlp.yaml
"$BIN/strata-train" --print-config --config="$CFG" optimizer.lr=0.25 >"$W/eq.yaml"
"$BIN/strata-train" --print-config --config "$CFG" optimizer.lr=0.25 >"$W/space.yaml"
cmp -s "$W/eq.yaml" "$W/space.yaml" || fail "--config=FILE and --config FILE differ: $(diff "$W/eq.yaml" "$W/space.yaml")"
grep -q "lr: 0.25" "$W/eq.yaml" || fail "the override is not in the printed config"
echo "PASS: --version, --help and unknown options on every binary; --config=FILE = --config FILE"
