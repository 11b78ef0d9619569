#include "train/trainer/stop_signal.h"

#include <pthread.h>
#include <time.h>

#include <atomic>
#include <csignal>
#include <thread>

namespace strata {
namespace {

constexpr int kStopSignals[] = {SIGTERM, SIGINT, SIGUSR1};  // SIGUSR1: mpirun forwards it to every rank

std::atomic<int> g_stop{0};
std::atomic<double> g_stop_at{0};  // lock-free: stored from the handler
std::atomic<bool> g_taken_by_thread{false};

// A repeat of the first stop signal this soon after it is the same request sent
// twice, not a second one: Slurm sends a job it preempts without a grace time
// SIGTERM twice, about 10 ms apart (the preemption's, then the requeue's).
constexpr double kRepeatWindowS = 2.0;

double monotonic_now() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// Records `sig`; true when it is a second signal of the same kind (after the
// repeat window): the caller then gives up on a clean stop. Async-signal-safe.
bool note_signal(int sig) {
  if (g_stop.load() == sig)
    return !(g_stop_at.load() > 0 && monotonic_now() - g_stop_at.load() < kRepeatWindowS);
  if (g_stop.load() == 0) g_stop_at.store(monotonic_now());
  g_stop.store(sig);
  return false;
}

void on_signal(int sig) {
  if (!note_signal(sig)) return;
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

sigset_t stop_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kStopSignals) sigaddset(&set, s);
  return set;
}

}  // namespace

void take_stop_signals_on_a_thread() {
  // Threads started before main() keep the signals unblocked (OpenBLAS starts
  // its idle workers when the library loads): a signal landing there runs the
  // handler, which records it as the thread below does.
  for (int s : kStopSignals) std::signal(s, on_signal);
  sigset_t set = stop_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // this thread and every thread it starts from now on
  g_taken_by_thread = true;
  std::thread([set] {
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0 || !note_signal(sig)) continue;
      // a second signal: the default action, on this thread, for the whole process
      std::signal(sig, SIG_DFL);
      sigset_t one;
      sigemptyset(&one);
      sigaddset(&one, sig);
      pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
      std::raise(sig);
    }
  }).detach();
}

void install_stop_handlers() {
  if (g_taken_by_thread) return;  // the program takes them on its own thread
  for (int s : kStopSignals) std::signal(s, on_signal);
}

int stop_requested() { return g_stop.load(); }
double stop_requested_at() { return g_stop_at.load(); }
void request_stop(int s) { g_stop.store(s); }

}  // namespace strata
