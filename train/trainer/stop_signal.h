// SIGTERM / SIGINT / SIGUSR1: the trainer finishes the current step, saves a checkpoint and
// returns; a second signal of the same kind falls back to the default action, unless it
// comes within 2 s of the first (the same request sent twice, as Slurm does).
#pragma once

namespace strata {

void install_stop_handlers();
// 0 when no stop was requested, else the signal number.
int stop_requested();
// When the first stop signal arrived, in seconds of CLOCK_MONOTONIC (0: none
// yet): a preempted run's grace period counts from there.
double stop_requested_at();
void request_stop(int signal_number);

}  // namespace strata
