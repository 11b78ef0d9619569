// strata-bench subcommand registry: each bench/<name>.cpp registers itself with
// STRATA_BENCH(name, "one-line help") { ... return exit_code; }
// The body sees its arguments as `args` and as `cli`, a CLI11 app named
// "strata-bench <name>" to declare its options on before cli.parse().
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bench_cli.h"

namespace strata::bench {

using BenchFn = std::function<int(const std::vector<std::string>& args, BenchCli& cli)>;

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

#define STRATA_BENCH(name, help)                                                                        \
  static int strata_bench_##name(const std::vector<std::string>& args, ::strata::bench::BenchCli& cli); \
  static ::strata::bench::BenchRegistrar strata_bench_reg_##name(#name, help, strata_bench_##name);     \
  static int strata_bench_##name([[maybe_unused]] const std::vector<std::string>& args,                 \
                                 [[maybe_unused]] ::strata::bench::BenchCli& cli)
