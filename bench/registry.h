// strata-bench subcommand registry: each bench/<name>.cpp registers itself with
// STRATA_BENCH(name, "one-line help") { ... return exit_code; }
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace strata::bench {

using BenchFn = std::function<int(const std::vector<std::string>& args)>;

struct BenchEntry {
  std::string help;
  BenchFn run;
};

inline std::map<std::string, BenchEntry>& registry() {
  static std::map<std::string, BenchEntry> r;
  return r;
}

struct BenchRegistrar {
  BenchRegistrar(const char* name, const char* help, BenchFn fn) {
    registry()[name] = BenchEntry{help, std::move(fn)};
  }
};

}  // namespace strata::bench

#define STRATA_BENCH(name, help)                                                                    \
  static int strata_bench_##name(const std::vector<std::string>& args);                             \
  static ::strata::bench::BenchRegistrar strata_bench_reg_##name(#name, help, strata_bench_##name); \
  static int strata_bench_##name(const std::vector<std::string>& args)
