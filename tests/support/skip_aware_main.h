#pragma once
// The suite's gtest entry point: runs the tests and turns the outcome into the
// exit code CTest reads. 0: every test that ran passed; 1: one failed; 77 (the
// tests' SKIP_RETURN_CODE): none failed but at least one said GTEST_SKIP, so
// CTest shows the binary Skipped, never Passed. The skipped tests are listed
// with their reasons on stderr.
namespace strata::testing {
inline constexpr int kSkipExitCode = 77;
// After InitGoogleTest: RUN_ALL_TESTS(), then the exit code above.
int run_all_tests_reporting_skips();
}  // namespace strata::testing
