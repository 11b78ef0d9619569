// Byte sizes written as 4K, 64M, 1G, shared by the distributed benchmarks.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace strata::bench {

inline size_t parse_bytes(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  std::string unit = end;
  double m = unit.empty() || unit == "B" ? 1
             : unit == "K"               ? 1024.0
             : unit == "M"               ? 1048576.0
             : unit == "G"               ? 1073741824.0
                                         : -1;
  if (end == s.c_str() || m < 0 || v <= 0) throw std::invalid_argument("bad size '" + s + "' (e.g. 4K, 64M)");
  return static_cast<size_t>(v * m);
}

inline std::string format_bytes(size_t b) {
  if (b >= (size_t{1} << 30) && b % (size_t{1} << 30) == 0) return std::to_string(b >> 30) + " GB";
  if (b >= (size_t{1} << 20) && b % (size_t{1} << 20) == 0) return std::to_string(b >> 20) + " MB";
  if (b >= 1024 && b % 1024 == 0) return std::to_string(b >> 10) + " KB";
  return std::to_string(b) + " B";
}

// The value after `key` in args, or `fallback`: for a benchmark not yet on
// BenchCli (bench_cli.h), which cannot tell an unknown option; new ones declare
// their options on `cli.app` instead.
inline std::string option(const std::vector<std::string>& args, const std::string& key,
                          const std::string& fallback) {
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == key) return args[i + 1];
  return fallback;
}

}  // namespace strata::bench
