#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "fuzz_target.h"

namespace strata::fuzz {

std::string scratch_file(const char* suffix) {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/strata-fuzz-" + std::to_string(::getpid()) + suffix;
}

void write_scratch(const std::string& path, const uint8_t* data, size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || (size > 0 && std::fwrite(data, 1, size, f) != size)) {
    std::fprintf(stderr, "fuzz: cannot write scratch file %s\n", path.c_str());
    std::abort();
  }
  std::fclose(f);
}

}  // namespace strata::fuzz
