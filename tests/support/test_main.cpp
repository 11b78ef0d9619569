// main() of every test binary that has none of its own (a static library's
// object: a binary that defines main, like test_op_table_cuda, never pulls it in).
#include <gtest/gtest.h>

#include "skip_aware_main.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return strata::testing::run_all_tests_reporting_skips();
}
