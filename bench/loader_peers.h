// Peers and machine limits for `strata-bench loader`: the naive one-object-per-
// sample loader, the upload of that per-sample copy, the disk's O_DIRECT
// sequential read, and the process's CPU time.
#pragma once
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "base/error.h"
#include "data/format/shard.h"
#include "data/loader/loader.h"

namespace strata::bench::loader_peers {
namespace fs = std::filesystem;
using namespace strata::data;
using Clock = std::chrono::steady_clock;

inline double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct EpochFigures {
  double seconds = 0, wait = 0;
  int64_t samples = 0, requests = 0, bytes = 0;
};

inline void step(double ms) {
  if (ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
}

// The naive peer: batch k = samples [k*B, (k+1)*B) of a seeded permutation, each
// one GET of its own object; `threads` workers each fetch whole batches, at most
// `threads` batches ahead of the consumer.
inline EpochFigures run_naive(const std::string& url, const SourceOptions& so, int64_t samples, int64_t batch,
                              int threads, double step_ms, int64_t total, int64_t sample_bytes) {
  std::vector<int64_t> perm(static_cast<size_t>(total));
  for (int64_t i = 0; i < total; ++i) perm[static_cast<size_t>(i)] = i;
  PlanRng rng(5);
  for (int64_t i = total; i > 1; --i)
    std::swap(perm[static_cast<size_t>(i - 1)], perm[rng.below(static_cast<uint64_t>(i))]);
  const int64_t nb = samples / batch;
  std::mutex mu;
  std::condition_variable cv;
  std::map<int64_t, std::vector<uint8_t>> ready;
  int64_t next_batch = 0, consumed = 0;
  std::atomic<int64_t> requests{0};
  std::exception_ptr err;
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&] {
      auto src = open_source(url, so);
      for (;;) {
        int64_t k;
        {
          std::unique_lock<std::mutex> lk(mu);
          cv.wait(lk, [&] { return err || next_batch >= nb || next_batch < consumed + threads; });
          if (err || next_batch >= nb) return;
          k = next_batch++;
        }
        std::vector<uint8_t> buf(static_cast<size_t>(batch * sample_bytes));
        try {
          for (int64_t i = 0; i < batch; ++i) {
            auto bytes = src->get("s/" + std::to_string(perm[static_cast<size_t>(k * batch + i)]));
            std::memcpy(buf.data() + i * sample_bytes, bytes.data(),
                        std::min<size_t>(bytes.size(), sample_bytes));
          }
        } catch (...) {
          std::lock_guard<std::mutex> lk(mu);
          err = std::current_exception();
          cv.notify_all();
          return;
        }
        requests += src->stats().requests.exchange(0);
        std::lock_guard<std::mutex> lk(mu);
        ready[k] = std::move(buf);
        cv.notify_all();
      }
    });
  EpochFigures f;
  auto t0 = Clock::now();
  for (int64_t k = 0; k < nb; ++k) {
    auto w0 = Clock::now();
    {
      std::unique_lock<std::mutex> lk(mu);
      cv.wait(lk, [&] { return err || ready.count(k); });
      if (err) break;
      ready.erase(k);
      consumed = k + 1;
    }
    cv.notify_all();
    f.wait += since(w0);
    step(step_ms);
  }
  for (auto& t : ts) t.join();
  if (err) std::rethrow_exception(err);
  f.seconds = since(t0);
  f.samples = nb * batch;
  f.requests = requests;
  f.bytes = f.samples * sample_bytes;
  return f;
}

// Uploads sample i (all fields, concatenated) as object "s/<i>" unless the last one exists.
inline void ensure_naive_copy(const std::string& naive_url, const SourceOptions& so, ShardCache& cache,
                              Source& src, int64_t count) {
  auto dst = open_source(naive_url, so);
  try {
    dst->head("s/" + std::to_string(count - 1));
    return;
  } catch (const strata::Error&) {
  }
  std::printf("uploading %ld samples as single objects to %s ...\n", static_cast<long>(count),
              naive_url.c_str());
  std::fflush(stdout);
  const Manifest& m = cache.manifest();
  std::atomic<int64_t> next{0};
  int64_t base = 0;
  for (auto& sh : m.shards) {
    if (base >= count) break;
    auto pin = cache.acquire(sh);
    ShardData d = ShardData::read(pin.path().string(), m.schema);
    int64_t n = std::min(d.samples(), count - base);
    next = 0;
    std::vector<std::thread> ts;
    for (int t = 0; t < 16; ++t)
      ts.emplace_back([&, base] {
        auto s = open_source(naive_url, so);
        for (int64_t i; (i = next++) < n;) {
          std::vector<uint8_t> obj;
          for (size_t f = 0; f < m.schema.size(); ++f) {
            size_t size = 0;
            const uint8_t* p = d.sample(f, i, &size);
            obj.insert(obj.end(), p, p + size);
          }
          s->put("s/" + std::to_string(base + i), obj);
        }
      });
    for (auto& t : ts) t.join();
    base += n;
  }
  (void)src;
}

inline double cpu_seconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + 1e-6 * (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

inline double load_average() {
  double l[1] = {0};
  return ::getloadavg(l, 1) == 1 ? l[0] : -1;
}

inline double disk_read_gbps(const fs::path& dir, int64_t mb) {
  fs::create_directories(dir);
  fs::path p = dir / "disk-probe.bin";
  const size_t chunk = 8 << 20;
  void* buf = nullptr;
  if (posix_memalign(&buf, 4096, chunk) != 0) throw strata::IoError("posix_memalign failed");
  std::memset(buf, 0x5A, chunk);
  int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw strata::IoError("cannot create " + p.string());
  for (int64_t w = 0; w < mb * (1 << 20); w += chunk)
    if (::write(fd, buf, chunk) != static_cast<ssize_t>(chunk))
      throw strata::IoError("short write to " + p.string());
  ::fsync(fd);
  ::close(fd);
  fd = ::open(p.c_str(), O_RDONLY | O_DIRECT);  // bypasses the page cache: the disk itself
  if (fd < 0) throw strata::IoError("cannot open " + p.string() + " with O_DIRECT");
  auto t0 = Clock::now();
  int64_t total = 0;
  for (ssize_t r; (r = ::read(fd, buf, chunk)) > 0;) total += r;
  double s = since(t0);
  ::close(fd);
  std::free(buf);
  fs::remove(p);
  return total / s / 1e9;
}

}  // namespace strata::bench::loader_peers
