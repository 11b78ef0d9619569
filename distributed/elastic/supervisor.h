// The supervisor of an elastic job (strata-elastic, issue 33; docs/launch.md,
// "Elastic jobs"). It runs strata-train under mpirun over the hosts a hostfile
// or a discovery command names, and keeps the run going as they change:
// growth waits for the next checkpoint (or grow_after_s), then stops the job
// cleanly (SIGUSR1 to mpirun) and relaunches it on more ranks; a shrink stops
// it at once; a death relaunches it from the last checkpoint, up to
// max_restarts times. Each launch keeps the global batch (batch_split.h) and
// resumes with checkpoint.resume=auto. A state file names the running mpirun,
// so that a supervisor started again with the same arguments adopts it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace strata::elastic {

struct SupervisorOptions {
  std::string hostfile, discovery;  // exactly one of them
  int min_ranks = 1, max_ranks = 0;
  int max_restarts = 3;
  double backoff_s = 5, grow_after_s = 300, poll_s = 2, stop_timeout_s = 120;
  int metrics_port = -1;     // < 0: no endpoint
  int64_t global_batch = 0;  // 0: data.batch_size x trainer.accumulate x the first launch's ranks
  std::string state_file;    // "" : RUN_DIR/strata-elastic.state, or /tmp/... for an s3:// run
  std::string mpirun = "mpirun";
  std::vector<std::string> mpirun_args;  // passed to mpirun before strata-train
  std::vector<std::string> train;        // strata-train and its arguments
};

// Returns the exit status strata-elastic ends with; throws ConfigError for bad options.
int supervise(const SupervisorOptions& o);

}  // namespace strata::elastic
