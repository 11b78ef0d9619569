// strata-bench token_stream: the token loader feeding a simulated training step
// from an object store (usually RGW behind strata-proxy --delay-ms), with the
// node cache holding the whole corpus and with it at a fraction of the corpus
// (the corpus then streams through the cache in shard windows; docs/loader.md,
// "Token datasets"). Per epoch: tokens/s fed, the fraction of the time the
// consumer waited for data, and the bytes fetched from the store beside the
// corpus's size (the bound for a streamed epoch: every shard once). The cache's
// usage is sampled after every batch (the scans not counted in the time) and its maximum
// printed beside the cap.
// A "json {...}" line per epoch is for scripts (bench/token_stream.sh).
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "data/loader/token_loader.h"
#include "loader_peers.h"
#include "registry.h"

namespace {
using namespace strata::bench::loader_peers;

struct Args {
  std::string url, endpoint, cache_dir = "/tmp/strata-bench-token-cache", fractions = "2,0.333";
  int64_t batch = 16, context = 128;
  int epochs = 2, staging = 4;
  double step_ms = 5;
};

std::vector<double> parse_fractions(const std::string& s) {
  std::vector<double> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    char* end = nullptr;
    const double f = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0' || f <= 0)
      throw strata::ConfigError("--cache-fractions: '" + item + "' is not a positive number");
    out.push_back(f);
  }
  return out;
}

}  // namespace

STRATA_BENCH(
    token_stream,
    "token loader with the cache holding the corpus and a fraction of it (tokens/s, data-wait, bytes)") {
  Args a;
  cli.app.add_option("--url", a.url, "Token dataset (s3://bucket/prefix, file dir); manifest.json inside")
      ->required();
  cli.app.add_option("--endpoint", a.endpoint, "S3 endpoint (e.g. strata-proxy's)");
  cli.app.add_option("--cache-dir", a.cache_dir, "Node-local cache root")->capture_default_str();
  cli.app
      .add_option("--cache-fractions", a.fractions,
                  "Cache capacities as fractions of the corpus, comma-separated (2: all of it, cached whole)")
      ->capture_default_str();
  cli.app.add_option("--batch", a.batch, "Windows per batch")->capture_default_str();
  cli.app.add_option("--context", a.context, "Tokens per window")->capture_default_str();
  cli.app.add_option("--epochs", a.epochs, "Epochs per cache size")->capture_default_str();
  cli.app.add_option("--staging", a.staging, "Staging threads")->capture_default_str();
  cli.app.add_option("--step-ms", a.step_ms, "Simulated training step per batch")->capture_default_str();
  if (int rc = cli.parse(); rc >= 0) return rc;

  for (double fraction : parse_fractions(a.fractions)) {
    TokenLoaderOptions o;
    o.url = a.url;
    o.source.endpoint = a.endpoint;
    o.cache_dir = fs::path(a.cache_dir) / "cache";
    o.batch_size = a.batch;
    o.context = a.context;
    o.staging_threads = a.staging;
    o.seed = 1;
    fs::remove_all(o.cache_dir);
    int64_t corpus = 0;
    {
      auto src = open_source(o.url, o.source);
      auto m = src->get("manifest.json");
      corpus = Manifest::from_json(std::string(m.begin(), m.end()), o.url + "/manifest.json").total_bytes();
    }
    o.cache_bytes = static_cast<int64_t>(fraction * static_cast<double>(corpus));
    TokenLoader loader(o);
    const int64_t tokens_per_batch = a.batch * a.context;
    std::printf(
        "corpus %s: %zu shards, %.2f MB; cache %.2f MB (%.3f of the corpus): %s; batch %lld x %lld tokens, "
        "step %.1f ms\n",
        a.url.c_str(), loader.manifest().shards.size(), corpus / 1e6, o.cache_bytes / 1e6, fraction,
        loader.window_shards() > 0
            ? ("shard windows of " + std::to_string(loader.window_shards()) + " shards").c_str()
            : "cached whole",
        static_cast<long long>(a.batch), static_cast<long long>(a.context), a.step_ms);
    strata::HostBatch b;
    for (int e = 0; e < a.epochs; ++e) {
      loader.start_epoch(e);
      int64_t max_usage = 0;
      double sampling = 0;  // the usage scans (a lock and a directory listing): not the loader's time
      const auto t0 = Clock::now();
      while (loader.next(b)) {
        step(a.step_ms);
        const auto u0 = Clock::now();
        max_usage = std::max(max_usage, loader.cache().usage_bytes());
        sampling += since(u0);
      }
      const double s = since(t0) - sampling;
      const strata::DataMetrics m = loader.metrics();
      const double tokens = static_cast<double>(m.batches * tokens_per_batch);
      std::printf(
          "  epoch %d: %9.0f tokens/s  data-wait %6.2f%%  from the store %7.2f MB in %4lld GETs (%.2f of the "
          "corpus)  cache max %.2f MB of %.2f  %lld evictions\n",
          e, tokens / s, 100.0 * m.wait_seconds / s, m.remote_bytes / 1e6,
          static_cast<long long>(m.remote_requests),
          static_cast<double>(m.remote_bytes) / static_cast<double>(corpus), max_usage / 1e6,
          o.cache_bytes / 1e6, static_cast<long long>(m.evictions));
      std::printf(
          "json {\"cache_fraction\": %g, \"window_shards\": %lld, \"epoch\": %d, \"tokens\": %.0f, "
          "\"seconds\": %.4f, "
          "\"wait\": %.4f, \"requests\": %lld, \"bytes\": %lld, \"corpus_bytes\": %lld, \"cache_bytes\": "
          "%lld, "
          "\"cache_max\": %lld, \"step_ms\": %g}\n",
          fraction, static_cast<long long>(loader.window_shards()), e, tokens, s, m.wait_seconds,
          static_cast<long long>(m.remote_requests), static_cast<long long>(m.remote_bytes),
          static_cast<long long>(corpus), static_cast<long long>(o.cache_bytes),
          static_cast<long long>(max_usage), a.step_ms);
      std::fflush(stdout);
    }
  }
  fs::remove_all(fs::path(a.cache_dir) / "cache");
  return 0;
}
