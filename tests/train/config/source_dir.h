// The source tree: $STRATA_SOURCE_DIR (set by ctest), else the configure-time path.
#pragma once
#include <cstdlib>
#include <string>

inline std::string strata_test_source_dir() {
  const char* dir = std::getenv("STRATA_SOURCE_DIR");
  return dir && *dir ? dir : STRATA_TEST_SOURCE_DIR;
}
