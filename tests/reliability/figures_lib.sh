# Sourced by the reliability tests: `figure KIND WHAT COUNT` appends one line to
# $STRATA_RELIABILITY_FIGURES (ctest sets it to a file in the build directory),
# from which tests/reliability/write_figures.py writes the table of the last
# run into docs/reliability.md. KIND is one of: kills (processes killed and
# resumed to identical results), faults (store or disk faults injected and
# survived), bad_inputs (malformed inputs refused with a clear error),
# fuzz_runs (parser executions on fuzzed input). Outside ctest it does nothing.
# Without COUNT, the count is what `tally KIND [N]` added up: a script tallies
# each case where its checks have passed, so the figure counts what was shown.
declare -A TALLY=()
tally() { TALLY[$1]=$(( ${TALLY[$1]:-0} + ${2:-1} )); }
figure() {
  local count=${3:-${TALLY[$1]:-0}}
  [ -n "${STRATA_RELIABILITY_FIGURES:-}" ] || return 0
  printf '%s\t%s\t%s\t%s\n' "$1" "$(basename "$0" .sh)" "$2" "$count" >>"$STRATA_RELIABILITY_FIGURES"
}
