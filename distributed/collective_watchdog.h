// CollectiveWatchdog: a thread that ends the job when a collective stalls, so a
// dead or wedged peer never hangs training forever. Each collective registers
// itself (op name, element count) before it starts and deregisters when it
// completes; when one has been outstanding longer than the timeout the watchdog
// prints the op, the rank and the elapsed time to stderr and calls the abort
// action (MPI_Abort for MPI; ncclCommAbort then MPI_Abort for NCCL).
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace strata {

// Exit status of a job the watchdog ended (EX_SOFTWARE; distinct from timeout(1)'s 124).
constexpr int kWatchdogExitCode = 70;

// The timeout from STRATA_COMM_TIMEOUT (seconds, fractional allowed; 0 disables),
// or `fallback_s` when unset. A malformed value is a ConfigError.
double comm_timeout_from_env(double fallback_s = 60.0);

class CollectiveWatchdog {
 public:
  // abort(message) must not return; if it does the process exits with kWatchdogExitCode.
  CollectiveWatchdog(int rank, double timeout_s, std::function<void(const std::string&)> abort);
  ~CollectiveWatchdog();
  CollectiveWatchdog(const CollectiveWatchdog&) = delete;
  CollectiveWatchdog& operator=(const CollectiveWatchdog&) = delete;

  double timeout_s() const { return timeout_s_; }
  bool enabled() const { return timeout_s_ > 0; }

  // Returns a ticket for end(); `what` names the op ("allreduce f32 sum count=1000").
  uint64_t begin(std::string what);
  void end(uint64_t ticket);

  // RAII guard for blocking collectives.
  class Scope {
   public:
    Scope(CollectiveWatchdog& w, std::string what) : w_(w), t_(w.begin(std::move(what))) {}
    ~Scope() { w_.end(t_); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    CollectiveWatchdog& w_;
    uint64_t t_;
  };

 private:
  using Clock = std::chrono::steady_clock;
  struct Pending {
    std::string what;
    Clock::time_point start;
  };
  void run();

  int rank_;
  double timeout_s_;
  std::function<void(const std::string&)> abort_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, Pending> pending_;  // ordered by ticket = by start time
  uint64_t next_ = 1;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace strata
