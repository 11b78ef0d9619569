#include "train/trainer/stop_signal.h"

#include <atomic>
#include <csignal>

namespace strata {
namespace {

std::atomic<int> g_stop{0};

void on_signal(int sig) {
  if (g_stop.load() == sig) {  // second signal: give up on a clean stop
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_stop.store(sig);
}

}  // namespace

void install_stop_handlers() {
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);
  std::signal(SIGUSR1, on_signal);  // mpirun forwards it to every rank at once
}

int stop_requested() { return g_stop.load(); }
void request_stop(int s) { g_stop.store(s); }

}  // namespace strata
