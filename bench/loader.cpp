// strata-bench loader: the staging loader against two peers in the same run, on a
// packed dataset in an object store (usually RGW behind strata-proxy --delay-ms):
//   naive      one object per sample, fetched by a few threads (a per-file loader)
//   no-ahead   staging loader with look-ahead 0 (a shard is fetched when needed)
//   loader     staging loader with look-ahead
// A consumer "trains" for --step-ms per batch; we print samples/s, the fraction
// of time the consumer waited for data (epoch 1 = cold cache, later epochs =
// steady state) and remote requests. --warm instead measures sample bytes/s
// delivered from a warm cache (step 0) beside the disk's O_DIRECT sequential read.
// --modes picks which of the three run; --proxy-stats adds, per epoch, the GETs
// and body bytes strata-proxy forwarded (measured there, not self-reported) and
// a "json {...}" line per epoch for scripts (bench/loaders_vs_peers.sh).
// --image-size S loads a pack of encoded images (strata-pack files) as training
// does: each decoded with RandomResizedCrop to S x S, flipped and normalised.
#include "data/loader/loader.h"

#include <cstdio>

#include "loader_peers.h"
#include "registry.h"

namespace {
using namespace strata::bench::loader_peers;

// Every option, filled by CLI11; a negative value means "the mode's default".
struct Args {
  std::string url, endpoint, cache_dir = "/tmp/strata-bench-cache", naive_url, proxy_stats;
  std::string modes = "naive,no-ahead,loader";
  int64_t cache_mb = -1, batch = 64, lookahead_mb = 32, window = 1, naive_samples = 6400, disk_mb = 1024;
  int64_t image_size = 0;
  int epochs = -1, staging = 4, decode = 2, naive_threads = 8;
  double step_ms = -1;
  bool warm = false;
};

void declare(CLI::App& app, Args& a) {
  app.add_option("--url", a.url, "Packed dataset (s3://bucket/prefix, file dir); manifest.json inside")
      ->required();
  app.add_option("--endpoint", a.endpoint, "S3 endpoint (e.g. strata-proxy's); default from the AWS/S3 env");
  app.add_option("--cache-dir", a.cache_dir, "Node-local cache root")->capture_default_str();
  app.add_option("--cache-mb", a.cache_mb, "Cache capacity (default: 2x the dataset)");
  app.add_option("--epochs", a.epochs, "Epochs per mode (default 3; --warm: 10)");
  app.add_option("--batch", a.batch, "Batch size")->capture_default_str();
  app.add_option("--step-ms", a.step_ms, "Simulated training step per batch (default 5; --warm: 0)");
  app.add_option("--lookahead-mb", a.lookahead_mb, "Look-ahead of the staging loader")->capture_default_str();
  app.add_option("--staging", a.staging, "Staging threads")->capture_default_str();
  app.add_option("--decode", a.decode, "Decode threads")->capture_default_str();
  app.add_option("--window", a.window, "Shards per sample-shuffle window")->capture_default_str();
  app.add_option("--naive-url", a.naive_url,
                 "Where the one-object-per-sample copy lives (default <url>-samples); uploaded when missing");
  app.add_option("--naive-samples", a.naive_samples, "Samples the naive loader reads (it is slow)")
      ->capture_default_str();
  app.add_option("--naive-threads", a.naive_threads, "The naive loader's fetch threads")
      ->capture_default_str();
  app.add_option("--modes", a.modes, "Comma-separated subset of naive, no-ahead, loader")
      ->capture_default_str();
  app.add_option("--proxy-stats", a.proxy_stats,
                 "strata-proxy's http://HOST:PORT: count each epoch's GETs and bytes there too (json lines)");
  app.add_option(
         "--image-size", a.image_size,
         "A dataset of encoded images (strata-pack files): decode each with RandomResizedCrop to this size, "
         "flip, and normalise with ImageNet's mean and std, in the decode threads (0: samples as stored)")
      ->capture_default_str();
  app.add_flag("--warm", a.warm, "Warm-cache throughput instead (step 0), beside the disk's O_DIRECT read");
  app.add_option("--disk-mb", a.disk_mb, "--warm: bytes of the disk read measured")->capture_default_str();
}

void print_row(const char* mode, int epoch, const EpochFigures& f) {
  std::printf("%-9s epoch %d  %9.0f samples/s  data-wait %6.2f%%  remote requests %6ld  remote MB %7.1f\n",
              mode, epoch, f.samples / f.seconds, 100.0 * f.wait / f.seconds, static_cast<long>(f.requests),
              f.bytes / 1e6);
}

// strata-proxy's counters (GET /.strata-proxy/stats): GETs forwarded and their
// response body bytes; zero without --proxy-stats.
struct ProxyCounts {
  int64_t gets = 0, bytes = 0;
};
ProxyCounts proxy_counts(const std::string& url) {
  if (url.empty()) return {};
  auto b = open_source(url + "/.strata-proxy")->get("stats");
  const std::string j(b.begin(), b.end());
  ProxyCounts c;
  if (auto p = j.find("\"GET\": {\"requests\": "); p != std::string::npos) {
    c.gets = std::strtoll(j.c_str() + p + 20, nullptr, 10);
    if (auto q = j.find("\"body_bytes\": ", p); q != std::string::npos)
      c.bytes = std::strtoll(j.c_str() + q + 14, nullptr, 10);
  }
  return c;
}

void print_json(const char* mode, int epoch, const EpochFigures& f, const ProxyCounts& p, int64_t cache) {
  std::printf(
      "json {\"mode\": \"%s\", \"epoch\": %d, \"samples\": %ld, \"seconds\": %.4f, \"wait\": %.4f, "
      "\"requests\": %ld, \"bytes\": %ld, \"proxy_gets\": %ld, \"proxy_bytes\": %ld, \"cache_bytes\": %ld}\n",
      mode, epoch, static_cast<long>(f.samples), f.seconds, f.wait, static_cast<long>(f.requests),
      static_cast<long>(f.bytes), static_cast<long>(p.gets), static_cast<long>(p.bytes),
      static_cast<long>(cache));
  std::fflush(stdout);
}

std::vector<EpochFigures> run_loader(LoaderOptions o, int epochs, double step_ms, const std::string& proxy,
                                     const char* mode) {
  fs::remove_all(o.cache_dir);
  Loader loader(o);
  std::vector<EpochFigures> out;
  strata::HostBatch b;
  for (int e = 0; e < epochs; ++e) {
    const ProxyCounts p0 = proxy_counts(proxy);
    loader.start_epoch(e);
    auto t0 = Clock::now();
    while (loader.next(b)) step(step_ms);
    const double s = since(t0);
    auto m = loader.metrics();
    out.push_back({s, m.wait_seconds, m.samples, m.remote_requests, m.remote_bytes});
    if (!proxy.empty()) {
      const ProxyCounts p1 = proxy_counts(proxy);
      print_json(mode, e + 1, out.back(), {p1.gets - p0.gets, p1.bytes - p0.bytes}, o.cache_bytes);
    }
  }
  return out;
}
int run_warm(LoaderOptions o, const Args& a, int64_t dataset_bytes) {
  // Warm means everything cached: never smaller than the data, whatever --cache-mb says.
  o.cache_bytes = std::max(o.cache_bytes, 2 * dataset_bytes + o.lookahead_bytes);
  const int epochs = a.epochs >= 0 ? a.epochs : 10;
  double disk = disk_read_gbps(o.cache_dir.parent_path(), a.disk_mb);
  for (bool norm : {false, true}) {
    LoaderOptions w = o;
    w.lifetime = CacheLifetime::kPersistent;  // warm it once, keep it for the timed epochs
    if (norm) {
      Loader probe(w);
      for (auto& f : probe.manifest().schema)
        if (f.dtype == "u8") w.normalize.push_back(NormalizeU8{f.name, {0.2860f}, {0.3530f}});
    }
    Loader loader(w);
    strata::HostBatch b;
    loader.start_epoch(0);
    while (loader.next(b)) {
    }
    int64_t in_bytes = 0, out_bytes = 0, samples = 0, requests = 0;
    const double cpu0 = cpu_seconds();
    auto t0 = Clock::now();
    for (int e = 1; e <= epochs; ++e) {
      loader.start_epoch(e);
      while (loader.next(b)) {
      }
      auto m = loader.metrics();
      out_bytes += m.sample_bytes;
      samples += m.samples;
      requests += m.remote_requests;
    }
    double s = since(t0);
    const double cpu = cpu_seconds() - cpu0;
    for (auto& f : loader.manifest().schema) in_bytes += f.bytes_per_sample() * samples;
    std::printf(
        "warm cache, normalise %-3s: %.2f GB/s of sample bytes read (%.2f GB/s written into batches), "
        "%.0f samples/s, %ld remote requests over %d epochs; disk O_DIRECT sequential read %.2f GB/s "
        "(ratio %.2f)\n",
        norm ? "on" : "off", in_bytes / s / 1e9, out_bytes / s / 1e9, samples / s,
        static_cast<long>(requests), epochs, disk, in_bytes / s / 1e9 / disk);
    // On a shared machine wall time includes waiting for a core; CPU time does not.
    std::printf("  CPU: %.2f s for %.2f GB (%.2f GB per CPU-second; load average now %.1f)\n", cpu,
                in_bytes / 1e9, in_bytes / 1e9 / cpu, load_average());
  }
  fs::remove_all(o.cache_dir);
  return 0;
}

}  // namespace

STRATA_BENCH(loader,
             "staging loader vs a per-sample loader and no look-ahead (samples/s, data-wait, requests)") {
  Args a;
  declare(cli.app, a);
  if (int rc = cli.parse(); rc >= 0) return rc;
  LoaderOptions o;
  o.url = a.url;
  o.source.endpoint = a.endpoint;
  o.cache_dir = fs::path(a.cache_dir) / "cache";
  o.batch_size = a.batch;
  o.lookahead_bytes = a.lookahead_mb << 20;
  o.staging_threads = a.staging;
  o.decode_threads = a.decode;
  o.shuffle_window = a.window;
  o.seed = 1;
  if (a.image_size > 0) {  // the training transform of an ImageFolder, as strata-train sets it up
    ImageDecodeOptions im;
    im.size = a.image_size;
    im.random_crop = true;
    im.hflip = 0.5;
    o.image = im;
    o.normalize.push_back(NormalizeU8{im.out_field, {0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}});
  }
  const double step_ms = a.step_ms >= 0 ? a.step_ms : a.warm ? 0 : 5;
  const int epochs = a.epochs >= 0 ? a.epochs : 3;

  Manifest m;
  {
    auto src = open_source(o.url, o.source);
    auto b = src->get("manifest.json");
    m = Manifest::from_json(std::string(b.begin(), b.end()), o.url + "/manifest.json");
  }
  o.cache_bytes = a.cache_mb >= 0 ? a.cache_mb << 20 : 2 * m.total_bytes() + o.lookahead_bytes;
  int64_t sample_bytes = 0;
  for (auto& f : m.schema)
    if (!f.variable) sample_bytes += f.bytes_per_sample();  // the naive loader's; encoded images vary
  std::printf(
      "dataset %s: %ld samples in %zu shards, %.1f MB; batch %ld, step %.1f ms, cache %.1f MB, "
      "look-ahead %.1f MB\n",
      o.url.c_str(), static_cast<long>(m.total_samples()), m.shards.size(), m.total_bytes() / 1e6,
      static_cast<long>(o.batch_size), step_ms, o.cache_bytes / 1e6, o.lookahead_bytes / 1e6);
  if (a.warm) return run_warm(o, a, m.total_bytes());

  auto wanted = [&](const char* mode) {
    return ("," + a.modes + ",").find("," + std::string(mode) + ",") != std::string::npos;
  };
  if (!wanted("naive") || !wanted("no-ahead")) {  // a subset: the rows alone
    for (const char* mode : {"naive", "no-ahead", "loader"}) {
      if (!wanted(mode)) continue;
      if (std::string(mode) == "naive")
        throw strata::ConfigError("strata-bench loader: --modes naive runs only with all three modes");
      LoaderOptions r = o;
      if (std::string(mode) == "no-ahead") r.lookahead_bytes = 0;
      auto rows = run_loader(r, epochs, step_ms, a.proxy_stats, mode);
      for (int e = 0; e < epochs; ++e) print_row(mode, e + 1, rows[e]);
    }
    fs::remove_all(o.cache_dir);
    return 0;
  }

  // (a) the naive per-sample loader, on a prefix of the data (it is slow)
  const std::string naive_url = a.naive_url.empty() ? o.url + "-samples" : a.naive_url;
  const int64_t naive_n = std::min<int64_t>(a.naive_samples, m.total_samples());
  {
    auto src = open_source(o.url, o.source);
    LoaderOptions c = o;
    c.cache_dir = o.cache_dir.string() + "-upload";
    fs::remove_all(c.cache_dir);
    ShardCache cache(*src, ShardCacheOptions{c.cache_dir, o.cache_bytes});
    ensure_naive_copy(naive_url, o.source, cache, *src, naive_n);
  }
  auto naive =
      run_naive(naive_url, o.source, naive_n, o.batch_size, a.naive_threads, step_ms, naive_n, sample_bytes);
  print_row("naive", 1, naive);

  LoaderOptions none = o;
  none.lookahead_bytes = 0;
  auto r0 = run_loader(none, epochs, step_ms, a.proxy_stats, "no-ahead");
  for (int e = 0; e < epochs; ++e) print_row("no-ahead", e + 1, r0[e]);
  auto r1 = run_loader(o, epochs, step_ms, a.proxy_stats, "loader");
  for (int e = 0; e < epochs; ++e) print_row("loader", e + 1, r1[e]);

  auto steady = [&](const std::vector<EpochFigures>& r) {
    EpochFigures s;
    for (size_t e = 1; e < r.size(); ++e) {
      s.seconds += r[e].seconds, s.wait += r[e].wait, s.samples += r[e].samples;
      s.requests += r[e].requests;
    }
    return s;
  };
  auto s1 = steady(r1), s0 = steady(r0);
  std::printf("\nsummary (epoch 1 = cold cache; steady = epochs 2..%d):\n", epochs);
  std::printf(
      "  loader   epoch 1: %.0f samples/s, data-wait %.2f%%, %ld requests; steady: data-wait %.2f%%, %ld "
      "requests\n",
      r1[0].samples / r1[0].seconds, 100 * r1[0].wait / r1[0].seconds, static_cast<long>(r1[0].requests),
      s1.seconds > 0 ? 100 * s1.wait / s1.seconds : 0.0, static_cast<long>(s1.requests));
  std::printf(
      "  no-ahead epoch 1: %.0f samples/s, data-wait %.2f%%, %ld requests; steady: data-wait %.2f%%, %ld "
      "requests\n",
      r0[0].samples / r0[0].seconds, 100 * r0[0].wait / r0[0].seconds, static_cast<long>(r0[0].requests),
      s0.seconds > 0 ? 100 * s0.wait / s0.seconds : 0.0, static_cast<long>(s0.requests));
  std::printf("  naive    (%ld samples): %.0f samples/s, data-wait %.2f%%, %ld requests (%.2f per sample)\n",
              static_cast<long>(naive.samples), naive.samples / naive.seconds,
              100 * naive.wait / naive.seconds, static_cast<long>(naive.requests),
              double(naive.requests) / naive.samples);
  std::printf(
      "  (samples/s also moves with how late the consumer's sleep wakes up on a busy machine;\n"
      "   data-wait is the figure that compares the loaders)\n");
  std::printf("  ratio loader/naive samples/s (epoch 1): %.1fx; loader/no-ahead (epoch 1): %.2fx\n",
              (r1[0].samples / r1[0].seconds) / (naive.samples / naive.seconds),
              (r1[0].samples / r1[0].seconds) / (r0[0].samples / r0[0].seconds));
  fs::remove_all(o.cache_dir);
  return 0;
}
