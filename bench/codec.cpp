// strata-bench codec: how fast a shard object decodes on one core, for each
// codec strata-pack --compress offers and for deflate (zlib, what HDF5's
// deflate filter runs: the `--deflate` shards' decode), on a real shard file.
// For each: the compression ratio, compression MB/s (packing's cost, once) and
// decode GB/s of shard bytes out, memory to memory (the codec alone) and file
// to file on --dir (what the node cache does: the downloaded frame in .tmp/
// decoded into a second temporary). The median of --repeat runs is shown, all
// on the calling thread, so GB/s is per core. Compare with the store's
// bandwidth: decoding pays while it outruns the download it follows.
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "base/error.h"
#include "data/format/shard_codec.h"
#include "registry.h"

namespace {
namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

std::vector<uint8_t> read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw strata::IoError("cannot read " + p.string());
  return {std::istreambuf_iterator<char>(in), {}};
}

template <class F>
double median_s(int repeats, F&& f) {
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = clock_type::now();
    f();
    t.push_back(std::chrono::duration<double>(clock_type::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Row {
  std::string codec;
  int level;
  double ratio, compress_mbs, decode_gbs, decode_file_gbs;
};

void print(const Row& r) {
  std::printf("%-8s %5d %7.2f %12.1f %14.2f %16.2f\n", r.codec.c_str(), r.level, r.ratio, r.compress_mbs,
              r.decode_gbs, r.decode_file_gbs);
}

}  // namespace

STRATA_BENCH(codec, "GB/s per core decoding a shard object: zstd, lz4 (strata-pack --compress), deflate") {
  std::string input, dir = "/dev/shm/strata-bench-codec";
  int repeats = 5;
  cli.app.add_option("--input", input, "An uncompressed shard file (e.g. a strata-pack tokens shard)")
      ->required();
  cli.app.add_option("--dir", dir, "Scratch directory for the file-to-file decode (RAM by default)")
      ->capture_default_str();
  cli.app.add_option("--repeat", repeats, "Timed runs of each (the median is reported)")
      ->capture_default_str();
  if (int rc = cli.parse(); rc >= 0) return rc;
  fs::create_directories(dir);
  const std::vector<uint8_t> plain = read_all(input);
  const double gb = static_cast<double>(plain.size()) / 1e9;
  std::printf("input %s: %.1f MB; one core; median of %d\n", input.c_str(), plain.size() / 1e6, repeats);
  std::printf("%-8s %5s %7s %12s %14s %16s\n", "codec", "level", "ratio", "compress MB/s", "decode GB/s",
              "decode->file GB/s");
  std::vector<uint8_t> out(plain.size());
  const struct {
    const char* codec;
    int level;
  } cases[] = {{"zstd", 1}, {"zstd", 3}, {"zstd", 9}, {"lz4", 0}, {"lz4", 9}};
  for (const auto& c : cases) {
    const fs::path frame_path = fs::path(dir) / "frame";
    const double tc = median_s(std::max(1, repeats / 2), [&] {
      strata::data::compress_shard_file(input, frame_path, c.codec, c.level);
    });
    const std::vector<uint8_t> frame = read_all(frame_path);
    const double td = median_s(repeats, [&] {
      size_t at = 0, put = 0;
      strata::data::decompress_stream(
          c.codec,
          [&](uint8_t* b, size_t cap) {
            const size_t n = std::min(cap, frame.size() - at);
            std::memcpy(b, frame.data() + at, n);
            at += n;
            return n;
          },
          [&](const uint8_t* p, size_t n) {
            std::memcpy(out.data() + put, p, n);
            put += n;
          },
          static_cast<int64_t>(plain.size()), "bench");
    });
    if (out != plain) throw strata::Error(std::string(c.codec) + " decoded to other bytes");
    const double tf = median_s(repeats, [&] {
      strata::data::decompress_shard_file(frame_path, fs::path(dir) / "decoded", c.codec,
                                          static_cast<int64_t>(plain.size()), "bench");
    });
    print({c.codec, c.level, static_cast<double>(plain.size()) / frame.size(), gb * 1e3 / tc, gb / td,
           gb / tf});
  }
  // Deflate: zlib at HDF5's usual levels, one stream over the whole file (HDF5
  // deflates per chunk, which decodes no faster).
  for (int level : {1, 6}) {
    std::vector<uint8_t> z(compressBound(plain.size()));
    uLongf zn = 0;
    const double tc = median_s(std::max(1, repeats / 2), [&] {
      zn = z.size();
      if (compress2(z.data(), &zn, plain.data(), plain.size(), level) != Z_OK)
        throw strata::Error("zlib compress");
    });
    const double td = median_s(repeats, [&] {
      uLongf n = out.size();
      if (uncompress(out.data(), &n, z.data(), zn) != Z_OK || n != plain.size())
        throw strata::Error("zlib uncompress");
    });
    print({"deflate", level, static_cast<double>(plain.size()) / zn, gb * 1e3 / tc, gb / td, 0.0});
  }
  std::printf("(deflate's file-to-file column is not measured: 0.00)\n");
  fs::remove_all(dir);
  return 0;
}
