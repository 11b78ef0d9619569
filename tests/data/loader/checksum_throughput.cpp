// Measures what verifying a shard when it is first mapped costs: xxh3 over a file
// (checksum_file, as MappedShard::open does it, the file in the page cache as a
// just-staged shard is) and over memory. Not a test: prints MB/s, docs/loader.md
// quotes it. Usage: checksum_throughput [MB (default 100)] [dir (default /tmp)]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/format/manifest.h"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  const int64_t mb = argc > 1 ? std::atoll(argv[1]) : 100;
  const fs::path dir = argc > 2 ? argv[2] : fs::temp_directory_path();
  const fs::path file = dir / ("strata-checksum-" + std::to_string(::getpid()) + ".bin");
  std::vector<char> data(static_cast<size_t>(mb) << 20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 2654435761u >> 13);
  std::ofstream(file, std::ios::binary).write(data.data(), static_cast<std::streamsize>(data.size()));

  auto best_mbps = [&](auto&& fn) {
    double best = 0;
    for (int rep = 0; rep < 5; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      fn();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best = std::max(best, static_cast<double>(mb) * 1.048576 / s);
    }
    return best;
  };
  std::string a, b;
  const double file_mbps = best_mbps([&] { a = strata::data::checksum_file(file.string()); });
  const double mem_mbps = best_mbps([&] { b = strata::data::checksum_bytes(data.data(), data.size()); });
  fs::remove(file);
  if (a != b) {
    std::fprintf(stderr, "file and memory checksums differ: %s vs %s\n", a.c_str(), b.c_str());
    return 1;
  }
  std::printf("%lld MiB: checksum_file %.0f MB/s (page cache), checksum_bytes %.0f MB/s (best of 5)\n",
              static_cast<long long>(mb), file_mbps, mem_mbps);
  return 0;
}
