// strata-bench store: MB/s of whole-object downloads from an S3 store (the
// test RGW), the staging loader's transfer path (S3Source::get_to_file) with
// 1, 4 and 16 connections per object, beside the peer measured in the same
// run: one `curl --aws-sigv4` process per object, a single stream, which is
// what `aws s3 cp`-style tools without ranged parts do. Modes alternate within
// each repeat, so a busy machine slows them alike; the median repeat is shown.
// Objects are downloaded one after another, as one staging thread does.
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "base/error.h"
#include "bench_args.h"
#include "data/format/manifest.h"
#include "data/store/s3_source.h"
#include "loader_peers.h"
#include "registry.h"

extern char** environ;

namespace {
using namespace strata::bench::loader_peers;

const char* kHelp = R"(usage: strata-bench store [options]
  --url URL          where the test objects live (default s3://strata-bench/store); the
                     bucket is created and the objects uploaded when missing
  --endpoint URL     S3 endpoint; default from the AWS/S3 environment (as are the keys)
  --objects N        objects (default 4)
  --size S           bytes per object, e.g. 256M (default 256M)
  --connections L    comma-separated connection counts (default 1,4,16)
  --part S           bytes per ranged GET (default 8M)
  --repeat N         repeats of every mode (default 3)
  --dir DIR          where downloads land (default /dev/shm/strata-bench-store, RAM: the
                     disk is not what is measured)
)";

struct Mode {
  std::string name;
  int connections = 0;  // 0: the curl peer
  std::vector<double> seconds;
  int64_t requests = 0, connects = 0;
};

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    const int n = std::atoi(item.c_str());
    if (n < 1) throw strata::ConfigError("--connections: '" + item + "' is not a count >= 1");
    out.push_back(n);
  }
  return out;
}

// A curl config file (mode 0600) with the keys, so they are not on a command line.
fs::path write_curl_config(const fs::path& dir, const SourceOptions& o) {
  const fs::path p = dir / "curl.conf";
  std::ofstream(p) << "user = \"" << o.access_key << ":" << o.secret_key << "\"\n";
  ::chmod(p.c_str(), 0600);
  return p;
}

void run_curl(const fs::path& config, const SourceOptions& o, const std::string& url, const fs::path& dest) {
  std::vector<std::string> args = {"curl",
                                   "-sS",
                                   "-f",
                                   "--aws-sigv4",
                                   "aws:amz:" + o.region + ":s3",
                                   "-K",
                                   config.string(),
                                   "-H",
                                   "x-amz-content-sha256: UNSIGNED-PAYLOAD",
                                   "-o",
                                   dest.string(),
                                   url};
  if (!o.session_token.empty())
    args.insert(args.end() - 1, {"-H", "x-amz-security-token: " + o.session_token});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawnp(&pid, "curl", nullptr, nullptr, argv.data(), environ) != 0)
    throw strata::IoError("cannot start curl (is it installed?)");
  int st = 0;
  ::waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    throw strata::RemoteError(
        "curl GET " + url + " failed (exit status " + std::to_string(WEXITSTATUS(st)) + ")", 0, "");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

STRATA_BENCH(store, "MB/s of large-object GETs from S3 with 1/4/16 connections vs single-stream curl") {
  using strata::bench::option;
  for (const auto& a : args)
    if (a == "--help") return std::fputs(kHelp, stdout), 0;
  const std::string url = option(args, "--url", "s3://strata-bench/store");
  SourceOptions so;
  so.endpoint = option(args, "--endpoint", "");
  so.parts.part_bytes = static_cast<int64_t>(strata::bench::parse_bytes(option(args, "--part", "8M")));
  so = resolve_s3_options(so);
  const int objects = std::stoi(option(args, "--objects", "4"));
  const int64_t size = static_cast<int64_t>(strata::bench::parse_bytes(option(args, "--size", "256M")));
  const int repeats = std::max(1, std::stoi(option(args, "--repeat", "3")));
  const fs::path dir = option(args, "--dir", "/dev/shm/strata-bench-store");
  fs::remove_all(dir);
  fs::create_directories(dir);

  // The objects: random bytes (incompressible), uploaded once, checksummed for the check below.
  create_bucket(url, so);
  S3Source up(url, so);
  std::vector<std::string> keys, sums;
  for (int i = 0; i < objects; ++i) {
    keys.push_back("object-" + std::to_string(i) + "-" + std::to_string(size));
    std::mt19937_64 rng(static_cast<uint64_t>(i) + 1);
    std::vector<uint8_t> bytes(static_cast<size_t>(size));
    for (size_t k = 0; k + 8 <= bytes.size(); k += 8) {
      const uint64_t r = rng();
      std::memcpy(bytes.data() + k, &r, 8);
    }
    sums.push_back(checksum_bytes(bytes.data(), bytes.size()));
    bool present = false;
    try {
      present = up.head(keys.back()).size == static_cast<uint64_t>(size);
    } catch (const strata::RemoteError&) {
    }
    if (!present) up.put(keys.back(), bytes);
  }

  std::vector<Mode> modes = {{"curl --aws-sigv4, 1 stream", 0, {}, 0, 0}};
  for (int c : parse_list(option(args, "--connections", "1,4,16")))
    modes.push_back({"strata, " + std::to_string(c) + " connection" + (c > 1 ? "s" : ""), c, {}, 0, 0});
  const fs::path curl_conf = write_curl_config(dir, so);
  const std::string http_base =
      so.endpoint + "/" + up.url().substr(5);  // path-style: endpoint/bucket/prefix/
  for (int r = 0; r < repeats; ++r) {
    for (Mode& mode : modes) {
      SourceOptions o = so;
      o.parts.connections = mode.connections;
      S3Source src(url, o);
      const auto t0 = Clock::now();
      for (int i = 0; i < objects; ++i) {
        const fs::path dest = dir / ("download-" + std::to_string(i));
        if (mode.connections == 0)
          run_curl(curl_conf, so, http_base + keys[i], dest);
        else
          src.get_to_file(keys[i], dest);
      }
      mode.seconds.push_back(since(t0));
      mode.requests = src.stats().requests;
      mode.connects = src.stats().connections;
      if (r == 0)  // every mode must bring the objects' bytes, or its speed means nothing
        for (int i = 0; i < objects; ++i)
          if (checksum_file((dir / ("download-" + std::to_string(i))).string()) != sums[i])
            throw strata::IoError(mode.name + ": download of " + keys[i] + " differs from the object");
    }
  }
  fs::remove_all(dir);

  const double total_mb = static_cast<double>(size) * objects / 1e6;
  const double peer = total_mb / median(modes[0].seconds);
  std::printf(
      "store: %d objects x %.1f MiB from %s (%s), part %.1f MiB, median of %d repeats, load average %.1f\n",
      objects, size / 1048576.0, so.endpoint.c_str(), url.c_str(), so.parts.part_bytes / 1048576.0, repeats,
      load_average());
  std::printf("%-28s %9s %9s %9s %9s %12s\n", "mode", "MB/s", "best MB/s", "vs curl", "requests",
              "new conns");
  for (const Mode& m : modes) {
    const double mbs = total_mb / median(m.seconds);
    const double best = total_mb / *std::min_element(m.seconds.begin(), m.seconds.end());
    const std::string req = m.connections ? std::to_string(m.requests) : std::to_string(objects);
    const std::string con = m.connections ? std::to_string(m.connects) : std::to_string(objects);
    std::printf("%-28s %9.0f %9.0f %8.2fx %9s %12s\n", m.name.c_str(), mbs, best, mbs / peer, req.c_str(),
                con.c_str());
  }
  std::printf(
      "(MB = 1e6 bytes; requests and new connections: of the last repeat; curl opens one connection per\n"
      " process, strata reuses the pool's keep-alive connections)\n");
  return 0;
}
