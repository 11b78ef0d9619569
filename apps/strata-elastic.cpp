// strata-elastic [--hostfile FILE | --discovery CMD] --min-ranks N --max-ranks M ... -- strata-train ARGS
// Wiring only: the command line -> elastic::supervise (distributed/elastic/supervisor.h).
// docs/launch.md, "Elastic jobs (strata-elastic)", says what it does and why.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "apps/command_line.h"
#include "base/error.h"
#include "distributed/elastic/supervisor.h"

namespace {

const char* kDescription =
    "Runs strata-train under mpirun over the hosts a hostfile or a discovery command names, and keeps the "
    "run going as they change:\n"
    "growth relaunches on more ranks at the run's next checkpoint, a shrink or a dead rank relaunches at "
    "once from the last checkpoint,\n"
    "each launch with the same global batch (data.batch_size changes, trainer.accumulate does not) and "
    "checkpoint.resume=auto.\n"
    "The strata-train command after -- must give --config and --run-dir. See docs/launch.md, \"Elastic "
    "jobs\".";

int run(int argc, char** argv) {
  strata::elastic::SupervisorOptions o;
  if (const char* m = std::getenv("MPIRUN"); m && *m) o.mpirun = m;
  CLI::App app(kDescription, "strata-elastic");
  strata::cli::add_version_flag(app);
  app.add_option("--hostfile", o.hostfile,
                 "Open MPI hostfile ('host slots=N' lines) read at every poll; ranks = the sum of slots")
      ->option_text("FILE");
  app.add_option("--discovery", o.discovery,
                 "Command run at every poll that prints 'host:slots' lines (Horovod's host discovery)")
      ->option_text("CMD");
  app.add_option("--min-ranks", o.min_ranks, "Below this many ranks, wait instead of launching")
      ->required()
      ->option_text("N");
  app.add_option("--max-ranks", o.max_ranks, "Launch at most this many ranks")->required()->option_text("M");
  app.add_option("--max-restarts", o.max_restarts,
                 "Relaunches after the job died (not stopped by strata-elastic) before giving up (default 3)")
      ->option_text("K");
  app.add_option("--backoff-s", o.backoff_s, "Seconds between a death and the relaunch (default 5)")
      ->option_text("S");
  app.add_option("--grow-after-s", o.grow_after_s,
                 "On growth, stop the job this long after the change if it wrote no checkpoint since "
                 "(default 300)")
      ->option_text("S");
  app.add_option("--poll-s", o.poll_s, "Seconds between looks at the membership and the job (default 2)")
      ->option_text("S");
  app.add_option("--stop-timeout-s", o.stop_timeout_s,
                 "After SIGUSR1, seconds before SIGTERM to mpirun, and as many again before SIGKILL "
                 "(default 120)")
      ->option_text("S");
  app.add_option("--global-batch", o.global_batch,
                 "Samples per optimizer step over all ranks (default: data.batch_size x trainer.accumulate x "
                 "the first launch's ranks)")
      ->option_text("G");
  app.add_option("--state", o.state_file,
                 "State file naming the running mpirun (default RUN_DIR/strata-elastic.state; for an s3:// "
                 "run directory, one in the temporary directory)")
      ->option_text("FILE");
  app.add_option("--metrics-port", o.metrics_port,
                 "Serve strata_elastic_* Prometheus series on this port (0: a free one)")
      ->option_text("P");
  app.add_option("--mpirun-arg", o.mpirun_args,
                 "An argument for mpirun, before the strata-train command (repeat: --mpirun-arg=--bind-to "
                 "--mpirun-arg=none); the mpirun binary is $MPIRUN, else mpirun")
      ->option_text("ARG");
  app.footer(
      "After the options: -- strata-train ARGS ... (the job's command; --config and --run-dir required)");
  // everything after the first "--" is the job's command, passed on as it is
  int ours = argc;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--") {
      ours = i;
      break;
    }
  for (int i = ours + 1; i < argc; ++i) o.train.emplace_back(argv[i]);
  if (int rc = strata::cli::parse(app, ours, argv); rc >= 0) return rc;
  if (o.train.empty()) {
    std::fprintf(
        stderr,
        "strata-elastic: no job command: give -- strata-train ARGS ...\n(see strata-elastic --help)\n");
    return 2;
  }
  return strata::elastic::supervise(o);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const strata::Error& e) {
    std::fprintf(stderr, "strata-elastic: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata-elastic: internal error: %s\n", e.what());
    return 1;
  }
}
