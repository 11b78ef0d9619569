#include "train/trainer/stop_signal.h"

#include <time.h>

#include <atomic>
#include <csignal>

namespace strata {
namespace {

std::atomic<int> g_stop{0};
std::atomic<double> g_stop_at{0};  // lock-free: stored from the handler

// A repeat of the first stop signal this soon after it is the same request sent
// twice, not a second one: Slurm sends a job it preempts without a grace time
// SIGTERM twice, about 10 ms apart (the preemption's, then the requeue's).
constexpr double kRepeatWindowS = 2.0;

double monotonic_now() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

void on_signal(int sig) {
  if (g_stop.load() == sig) {  // second signal: give up on a clean stop
    if (g_stop_at.load() > 0 && monotonic_now() - g_stop_at.load() < kRepeatWindowS) return;
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  if (g_stop.load() == 0) g_stop_at.store(monotonic_now());
  g_stop.store(sig);
}

}  // namespace

void install_stop_handlers() {
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);
  std::signal(SIGUSR1, on_signal);  // mpirun forwards it to every rank at once
}

int stop_requested() { return g_stop.load(); }
double stop_requested_at() { return g_stop_at.load(); }
void request_stop(int s) { g_stop.store(s); }

}  // namespace strata
