// SIGTERM / SIGINT / SIGUSR1: the trainer finishes the current step, saves a checkpoint and
// returns; a second signal of the same kind falls back to the default action, unless it
// comes within 2 s of the first (the same request sent twice, as Slurm does).
#pragma once

namespace strata {

// Handlers for the three (Trainer::fit installs them): they run on whichever
// thread the signal lands on.
void install_stop_handlers();
// For a program's main(), before it starts any thread: the stop signals are
// blocked in the calling thread and every thread started after it, and one
// thread of their own takes them with sigwait(); threads that started before
// main() (OpenBLAS's) get the handlers; install_stop_handlers() then does
// nothing. No handler ever interrupts a computing thread: a SIGTERM that
// landed on the main thread inside oneDNN's sgemm was followed by a corrupted
// heap ("corrupted size vs. prev_size") in 3 of 16 runs, and in 0 of 32 runs
// with this. Children a program spawns must unblock them (posix_spawn's
// POSIX_SPAWN_SETSIGMASK).
void take_stop_signals_on_a_thread();
// 0 when no stop was requested, else the signal number.
int stop_requested();
// When the first stop signal arrived, in seconds of CLOCK_MONOTONIC (0: none
// yet): a preempted run's grace period counts from there.
double stop_requested_at();
void request_stop(int signal_number);

}  // namespace strata
