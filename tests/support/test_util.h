// Small helpers shared by the data_io tests: a scratch directory per test.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace strata::data::testing {

inline std::filesystem::path scratch_dir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() / ("strata-data-io-" + std::to_string(::getpid())) / name;
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

inline void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

}  // namespace strata::data::testing
