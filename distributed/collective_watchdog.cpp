#include "distributed/collective_watchdog.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "base/error.h"

namespace strata {

double comm_timeout_from_env(double fallback_s) {
  const char* v = std::getenv("STRATA_COMM_TIMEOUT");
  if (!v || !*v) return fallback_s;
  char* end = nullptr;
  double s = std::strtod(v, &end);
  if (end == v || *end != '\0' || s < 0)
    throw ConfigError(
        std::string("STRATA_COMM_TIMEOUT must be a number of seconds >= 0 (0 disables), got '") + v + "'");
  return s;
}

CollectiveWatchdog::CollectiveWatchdog(int rank, double timeout_s,
                                       std::function<void(const std::string&)> abort)
    : rank_(rank), timeout_s_(timeout_s), abort_(std::move(abort)) {
  if (enabled()) thread_ = std::thread([this] { run(); });
}

CollectiveWatchdog::~CollectiveWatchdog() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

uint64_t CollectiveWatchdog::begin(std::string what) {
  if (!enabled()) return 0;
  std::lock_guard<std::mutex> lk(mu_);
  uint64_t t = next_++;
  pending_.emplace(t, Pending{std::move(what), Clock::now()});
  // No notify: the thread already wakes by the oldest deadline, and a new entry is never older.
  return t;
}

void CollectiveWatchdog::end(uint64_t ticket) {
  if (ticket == 0) return;
  std::lock_guard<std::mutex> lk(mu_);
  pending_.erase(ticket);
}

void CollectiveWatchdog::run() {
  const auto timeout = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_));
  // Wake at least this often so that an entry added to an empty map is seen in time.
  const auto tick = std::min<Clock::duration>(timeout / 4, std::chrono::milliseconds(500));
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    auto now = Clock::now();
    if (!pending_.empty()) {
      const Pending& oldest = pending_.begin()->second;
      if (now - oldest.start >= timeout) {
        double elapsed = std::chrono::duration<double>(now - oldest.start).count();
        char buf[512];
        std::snprintf(buf, sizeof buf,
                      "strata collective watchdog: rank %d: %s has not completed after %.1f s "
                      "(timeout %.1f s, STRATA_COMM_TIMEOUT); a peer is dead or stuck; aborting the job",
                      rank_, oldest.what.c_str(), elapsed, timeout_s_);
        std::string msg = buf;
        lk.unlock();
        std::fprintf(stderr, "%s\n", msg.c_str());
        std::fflush(stderr);
        abort_(msg);
        _exit(kWatchdogExitCode);  // abort_ should not return
      }
      cv_.wait_until(lk, std::min(oldest.start + timeout, now + tick));
    } else {
      cv_.wait_for(lk, tick);
    }
  }
}

}  // namespace strata
