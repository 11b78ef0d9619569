#!/usr/bin/env bash
# Rehearses, on this CPU machine, exactly what a borrowed GPU machine will be asked
# to do, under that machine's rules (the device tool: one shell command of at most
# 2000 characters run in a copy of the working tree, which with the carried paths
# must stay under 64 MiB; results only from $OUT: at most 8 files of 16 MiB, at
# most two folders down, plain names):
#   1. builds the archive (scripts/gpu-bundle.sh -> .gpu/strata-gpu.tar.xz);
#   2. checks tracked tree + untracked-unignored files + the carried .gpu/ <= 60 MiB;
#   3. checks that gpu-check's step limits add up to no more than its budget;
#   4. prints the one command, and runs it here with OUT pointing at an empty folder;
#   5. checks what it left in $OUT against the rules, and that every step of the
#      report says SKIPPED with its reason (no GPU here).
# On the GPU machine: call the device tool with that command, carry [".gpu"], and a
# timeout_s of 540 (the command ends itself inside 8 minutes).
#   STRATA_GPU_REHEARSE_SKIP_BUILD=1   reuse the archive already in .gpu/
set -euo pipefail
cd "$(dirname "$0")/.."
ARCHIVE=.gpu/strata-gpu.tar.xz
TREE_LIMIT_MIB=60   # a margin under the tool's 64
say() { echo "[gpu-rehearse] $*"; }
die() { echo "[gpu-rehearse] FAIL: $*" >&2; exit 1; }

[ "${STRATA_GPU_REHEARSE_SKIP_BUILD:-0}" = 1 ] && [ -f "$ARCHIVE" ] || STRATA_GPU_ARCHIVE=$ARCHIVE scripts/gpu-bundle.sh
git check-ignore -q "$ARCHIVE" || die "$ARCHIVE is not ignored by git: it would travel twice (tracked and carried)"

# 2. what travels: the tracked files as they are in the working tree, the
# untracked files git does not ignore, and the carried folder
bytes_of() { tr '\n' '\0' | xargs -0 -r stat -c %s -- 2>/dev/null | awk '{s += $1} END {print s + 0}'; }
tracked=$(git ls-files | while read -r f; do [ -f "$f" ] && echo "$f"; done | bytes_of)
untracked=$(git ls-files --others --exclude-standard | bytes_of)
carried=$(find .gpu -type f | bytes_of)
total=$((tracked + untracked + carried))
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
say "size: tracked $(mib "$tracked") + untracked $(mib "$untracked") + carried .gpu $(mib "$carried") = $(mib "$total") (limit ${TREE_LIMIT_MIB} MiB)"
[ "$total" -le $((TREE_LIMIT_MIB * 1048576)) ] || die "$(mib "$total") would travel, over ${TREE_LIMIT_MIB} MiB"

# 3. the plan, from the staged bundle gpu-bundle.sh packed
build=${STRATA_GPU_BUILD_DIR:-build-gpu}
"$build/strata-gpu/gpu-check.sh" --plan | tail -1

# 4. the one command: unpack into /tmp (tar's xz, or Python's where tar has no xz), run
CMD='B=/tmp/strata-gpu-run; rm -rf $B && mkdir -p $B && { tar -xJf .gpu/strata-gpu.tar.xz -C $B || python3 -c "import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" .gpu/strata-gpu.tar.xz $B; } && $B/strata-gpu/gpu-run.sh'
say "the command (${#CMD} characters; carry [\".gpu\"], timeout_s 540):"
echo "$CMD"
[ "${#CMD}" -le 2000 ] || die "the command is ${#CMD} characters, over 2000"
OUT=$(mktemp -d /tmp/strata-gpu-out.XXXXXX)
export OUT
say "running it with OUT=$OUT"
t0=$(date +%s)
rc=0
bash -c "$CMD" >/tmp/strata-gpu-rehearse.console 2>&1 || rc=$?
say "it ended with exit $rc after $(( $(date +%s) - t0 )) s"
[ "$rc" -eq 0 ] || { tail -30 /tmp/strata-gpu-rehearse.console >&2; die "the command failed here (exit $rc)"; }

# 5. the $OUT rules, then the report
files=$(find "$OUT" -mindepth 1 -type f | wc -l)
say "\$OUT holds: $(cd "$OUT" && find . -mindepth 1 -printf '%P (%s bytes) ' )"
[ "$files" -le 8 ] || die "$files files in \$OUT, over 8"
[ -z "$(find "$OUT" -mindepth 1 ! -type f ! -type d)" ] || die "\$OUT holds something that is not a plain file or folder"
[ -z "$(find "$OUT" -mindepth 3 -type f)" ] || die "a file more than two folders down in \$OUT"
[ -z "$(find "$OUT" -type f -size +16M)" ] || die "a file over 16 MiB in \$OUT"
[ -z "$(find "$OUT" -mindepth 1 | sed "s|^$OUT/||" | tr '/' '\n' | grep -v '^[A-Za-z0-9._-]*$')" ] || die "a name in \$OUT outside letters, digits, '.', '_', '-'"
for f in gpu-report.md console.txt logs.tgz; do [ -s "$OUT/$f" ] || die "\$OUT/$f is missing or empty"; done
step_rows() { grep -E '^\| [a-z]' "$OUT/gpu-report.md" | grep -v '^| step | status'; }
rows=$(step_rows | wc -l)
[ "$rows" -gt 0 ] || die "the report has no step rows"
bad=$(step_rows | awk -F'|' '$3 !~ /SKIPPED/ || $5 ~ /^ *$/ {print $2}' | tr -s ' ')
[ -z "$bad" ] || { cat "$OUT/gpu-report.md" >&2; die "steps that did not say SKIPPED with a reason:$bad"; }
tar -tzf "$OUT/logs.tgz" | grep -qE '\.h5$|/checkpoints/|/cache/' && die "logs.tgz holds checkpoints or caches"
say "PASS: $rows steps, every one SKIPPED with its reason; \$OUT within the rules"
rm -rf "$OUT"
