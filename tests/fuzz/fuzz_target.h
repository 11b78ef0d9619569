// One fuzz target = one file defining LLVMFuzzerTestOneInput over a parser of
// untrusted input. A strata::Error is the parser refusing bad input (the
// expected outcome); any other exception, a crash or a sanitizer report is a
// finding. The same file links either with libFuzzer (clang, STRATA_FUZZ=ON:
// coverage-guided, scripts/fuzz.sh) or with replay_main.cpp (any compiler: the
// committed corpus plus a fixed number of seeded mutations, a unit test in CI).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "base/error.h"

namespace strata::fuzz {

// Runs `parse`; refusals (strata::Error) are fine, anything else aborts so
// that both libFuzzer and the replay driver report the input.
template <class F>
int run_one(F&& parse) {
  try {
    parse();
  } catch (const strata::Error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz finding: a %s escaped the parser: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
  return 0;
}

// A private scratch file per process for parsers that read from a path.
std::string scratch_file(const char* suffix);
void write_scratch(const std::string& path, const uint8_t* data, size_t size);

}  // namespace strata::fuzz
