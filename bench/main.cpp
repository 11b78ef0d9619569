// strata-bench <name> [args...]: runs one benchmark; each prints its figure beside
// a peer measured in the same run, as a ratio.
#include <cstdio>
#include <exception>

#include "registry.h"

int main(int argc, char** argv) {
  auto& reg = strata::bench::registry();
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::printf("usage: strata-bench <benchmark> [options]\n\nbenchmarks:\n");
    for (auto& [name, e] : reg) std::printf("  %-12s %s\n", name.c_str(), e.help.c_str());
    return argc < 2 ? 2 : 0;
  }
  auto it = reg.find(argv[1]);
  if (it == reg.end()) {
    std::fprintf(stderr, "strata-bench: unknown benchmark '%s' (try --help)\n", argv[1]);
    return 2;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  try {
    return it->second.run(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata-bench %s: error: %s\n", argv[1], e.what());
    return 1;
  }
}
