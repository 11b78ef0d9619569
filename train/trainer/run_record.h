// RunRecord: what a run directory needs to say how it was made, so that a run
// can be repeated: the command line with its key=value overrides, the strata
// version and git commit it was built from, the host of rank 0 and the number
// of ranks. The trainer writes it as run.json when it takes the run directory
// (atomically, replacing the record of an earlier invocation that resumed into
// the same directory) and repeats the fields in summary.json.
#pragma once
#include <string>
#include <vector>

namespace strata {

struct RunRecord {
  std::vector<std::string> command_line;  // argv as given, program name first; empty for library use
  std::vector<std::string> overrides;     // the key=value overrides among them, in order
  std::string config_file;                // the --config path as given ("" when none)
  std::string strata_version, git_commit;
  std::string host;        // rank 0's host name
  int world_size = 1;      // ranks
  std::string started_at;  // UTC, ISO 8601: "2026-12-01T19:30:00Z"

  // The build's version and commit, this host, the time now, `world_size`;
  // the command line, overrides and config file are left as they are.
  void fill_from_this_process(int world_size);
  std::string to_json() const;  // one JSON object, pretty-printed
};

}  // namespace strata
