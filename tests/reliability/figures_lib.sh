# Sourced by the reliability tests: `figure KIND WHAT COUNT` appends one line to
# $STRATA_RELIABILITY_FIGURES (ctest sets it to a file in the build directory),
# from which tests/reliability/write_figures.py writes the table of the last
# run into docs/reliability.md. KIND is one of: kills (processes killed and
# resumed to identical results), faults (store or disk faults injected and
# survived), bad_inputs (malformed inputs refused with a clear error),
# fuzz_runs (parser executions on fuzzed input). Outside ctest it does nothing.
figure() {
  [ -n "${STRATA_RELIABILITY_FIGURES:-}" ] || return 0
  printf '%s\t%s\t%s\t%s\n' "$1" "$(basename "$0" .sh)" "$2" "$3" >>"$STRATA_RELIABILITY_FIGURES"
}
