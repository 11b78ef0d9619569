#include "distributed/elastic/supervisor.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "distributed/elastic/batch_split.h"
#include "distributed/elastic/membership.h"
#include "train/config/load.h"
#include "train/logging/metrics_endpoint.h"

namespace strata::elastic {
namespace fs = std::filesystem;

namespace {

volatile sig_atomic_t g_signal = 0;
void on_stop_signal(int sig) { g_signal = sig; }

void say(const std::string& line) {
  std::printf("strata-elastic: %s\n", line.c_str());
  std::fflush(stdout);
}

std::string seconds(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", s);
  return b;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// What strata-elastic needs of strata-train's command line.
struct TrainCommand {
  std::string config, run_dir;
  std::vector<std::string> overrides;
};

TrainCommand read_train_command(const std::vector<std::string>& args) {
  if (args.empty()) throw ConfigError("no strata-train command after --");
  TrainCommand t;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const std::string& name, std::string& out) {
      if (a == name) {
        if (i + 1 >= args.size()) throw ConfigError("strata-train " + name + " needs a value");
        out = args[++i];
        return true;
      }
      if (a.rfind(name + "=", 0) == 0) {
        out = a.substr(name.size() + 1);
        return true;
      }
      return false;
    };
    if (value("--config", t.config) || value("--run-dir", t.run_dir)) continue;
    if (a == "--dry-run" || a == "--print-config")
      throw ConfigError("strata-train " + a + " has nothing to supervise");
    if (a.rfind("-", 0) != 0 && a.find('=') != std::string::npos) t.overrides.push_back(a);
  }
  if (t.config.empty()) throw ConfigError("the strata-train command has no --config");
  if (t.run_dir.empty())
    throw ConfigError(
        "the strata-train command has no --run-dir: every launch of an elastic job must resume the same "
        "run directory (a local path, or s3://BUCKET/PREFIX)");
  return t;
}

bool is_store_url(const std::string& dir) { return dir.rfind("s3://", 0) == 0; }

// /proc/PID/stat's start time (field 22, clock ticks since boot); 0 when gone or a zombie.
uint64_t start_ticks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s;
  if (!std::getline(in, s)) return 0;
  const auto close = s.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(s.substr(close + 2));
  std::string field;
  rest >> field;  // field 3: the state
  if (field == "Z" || field == "X") return 0;
  for (int f = 4; f <= 22; ++f) rest >> field;
  return std::strtoull(field.c_str(), nullptr, 10);
}

std::string cmdline(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  std::string c = s.str();
  for (char& ch : c)
    if (ch == '\0') ch = ' ';
  return c;
}

// The state file: "key value" lines, written whole (rename) at each launch and restart.
struct State {
  pid_t mpirun_pid = 0;
  uint64_t start_ticks = 0;
  int64_t global_batch = 0;
  int world_size = 0;
  int restarts = 0;
};

State read_state(const std::string& path) {
  State st;
  std::ifstream in(path);
  std::string key;
  int64_t v = 0;
  while (in >> key >> v) {
    if (key == "mpirun_pid") st.mpirun_pid = static_cast<pid_t>(v);
    if (key == "start_ticks") st.start_ticks = static_cast<uint64_t>(v);
    if (key == "global_batch") st.global_batch = v;
    if (key == "world_size") st.world_size = static_cast<int>(v);
    if (key == "restarts") st.restarts = static_cast<int>(v);
  }
  return st;
}

void write_state(const std::string& path, const State& st) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "mpirun_pid " << st.mpirun_pid << "\nstart_ticks " << st.start_ticks << "\nglobal_batch "
        << st.global_batch << "\nworld_size " << st.world_size << "\nrestarts " << st.restarts << "\n";
    if (!out) throw IoError("cannot write the state file " + tmp);
  }
  fs::rename(tmp, path);
}

// The newest step-*.h5 of a local run directory ("" when none, or for s3://).
std::string newest_checkpoint(const std::string& run_dir) {
  if (is_store_url(run_dir)) return "";
  std::string newest;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(run_dir) / "checkpoints", ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("step-", 0) == 0 && n.size() > 3 && n.substr(n.size() - 3) == ".h5" && n > newest) newest = n;
  }
  return newest;
}

int exit_status(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return 1;
}

// Open MPI's failure-detection defaults of scripts/strata-mpirun, but for the
// grace before mpirun's SIGKILL; a value in the environment wins. strata-elastic
// stops a job with SIGUSR1, on which the ranks finish their step, checkpoint and
// exit by themselves (status 138), and a rank that died leaves the others stuck
// in a collective: either way mpirun's teardown starts when there is nothing
// left to wait for. Open MPI 4.1 still waits the grace twice (SIGCONT, grace,
// SIGTERM, grace, SIGKILL): 19.2 s after a clean stop with strata-mpirun's 10 s,
// 1.1 s with 1 s (bench/elastic_resize.sh). The grace matters only when mpirun
// itself is sent SIGTERM, which strata-elastic does after --stop-timeout-s.
void set_mpirun_defaults() {
  const char* grace = std::getenv("STRATA_STOP_GRACE");
  const std::map<std::string, std::string> defaults = {
      {"OMPI_MCA_oob_tcp_keepalive_time", "10"},
      {"OMPI_MCA_oob_tcp_keepalive_intvl", "5"},
      {"OMPI_MCA_oob_tcp_keepalive_probes", "3"},
      {"OMPI_MCA_odls_base_sigkill_timeout", grace && *grace ? grace : "1"},
      {"OMPI_MCA_orte_abort_on_non_zero_status", "1"},
      {"STRATA_COMM_TIMEOUT", "60"}};
  for (const auto& [k, v] : defaults) setenv(k.c_str(), v.c_str(), 0);
}

class Supervisor {
 public:
  explicit Supervisor(const SupervisorOptions& o) : o_(o), train_(read_train_command(o.train)) {
    if (o_.hostfile.empty() == o_.discovery.empty())
      throw ConfigError("give exactly one of --hostfile and --discovery");
    if (o_.min_ranks < 1 || o_.max_ranks < o_.min_ranks)
      throw ConfigError("--min-ranks must be at least 1 and --max-ranks at least --min-ranks");
    const TrainConfig cfg = load_config(train_.config, train_.overrides);
    config_batch_ = cfg.data.batch_size;
    accumulate_ = std::max<int64_t>(1, cfg.trainer.accumulate);
    state_path_ = o_.state_file;
    if (state_path_.empty()) {
      if (is_store_url(train_.run_dir)) {
        std::string name = train_.run_dir.substr(5);
        for (char& c : name)
          if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
        state_path_ = (fs::temp_directory_path() / ("strata-elastic-" + name + ".state")).string();
      } else {
        fs::create_directories(train_.run_dir);
        state_path_ = (fs::path(train_.run_dir) / "strata-elastic.state").string();
      }
    }
    hostfile_out_ = state_path_ + ".hosts";
    if (o_.metrics_port >= 0)
      endpoint_ = std::make_unique<MetricsEndpoint>("0.0.0.0", o_.metrics_port, [this] { return metrics(); });
  }

  int run() {
    set_mpirun_defaults();
    State st = read_state(state_path_);
    restarts_ = st.restarts;
    global_batch_ = o_.global_batch > 0 ? o_.global_batch : st.global_batch;
    // a global batch no rank count from --min-ranks to --max-ranks splits: the error names the ones that do
    if (global_batch_ > 0 && largest_compatible(global_batch_, accumulate_, o_.min_ranks, o_.max_ranks) == 0)
      split_global_batch(global_batch_, accumulate_, o_.max_ranks, o_.max_ranks);
    if (st.mpirun_pid > 0 && st.start_ticks > 0 && start_ticks(st.mpirun_pid) == st.start_ticks &&
        cmdline(st.mpirun_pid).find(train_.run_dir) != std::string::npos) {
      job_ = st.mpirun_pid;
      job_ticks_ = st.start_ticks;
      adopted_ = true;
      running_ranks_ = st.world_size;
      say("adopted the running job: mpirun pid " + std::to_string(job_) + " on " +
          std::to_string(running_ranks_) + " ranks (state file " + state_path_ + ")");
    } else if (finished()) {
      say("the run in " + train_.run_dir + " has already finished (summary.json): nothing to do");
      return 0;
    } else if (st.mpirun_pid > 0) {
      say("the job the state file names (mpirun pid " + std::to_string(st.mpirun_pid) +
          ") is not running: relaunching from the last checkpoint");
    }
    if (adopted_) {  // a membership that changed while no supervisor watched
      read_membership();
      if (launchable() != running_ranks_)
        change_note_ = "membership " + std::to_string(running_ranks_) + " -> " + std::to_string(wanted_) +
                       " ranks (changed while no supervisor ran: " + describe(hosts_) + ")";
    }
    if (o_.metrics_port >= 0 && endpoint_)
      say("metrics on http://0.0.0.0:" + std::to_string(endpoint_->port()) + "/metrics");
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    for (;;) {
      if (std::optional<int> rc = tick()) return *rc;
      for (double until = now_s() + o_.poll_s; now_s() < until && !g_signal;)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

 private:
  bool finished() const {
    return !is_store_url(train_.run_dir) && fs::exists(fs::path(train_.run_dir) / "summary.json");
  }

  // The membership now; the previous one when it cannot be read (said once).
  void read_membership() {
    try {
      std::vector<Host> hosts;
      std::string source;
      if (!o_.hostfile.empty()) {
        hosts = parse_hostfile(read_file(o_.hostfile), o_.hostfile);
        source = "hostfile";
      } else {
        FILE* p = ::popen(o_.discovery.c_str(), "r");
        if (!p) throw IoError("cannot run the discovery command '" + o_.discovery + "'");
        std::string out;
        char buf[4096];
        for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
        const int rc = ::pclose(p);
        if (rc != 0)
          throw IoError("the discovery command '" + o_.discovery + "' exited with status " +
                        std::to_string(exit_status(rc)));
        hosts = parse_discovery(out, "discovery output");
        source = "discovery";
      }
      membership_error_.clear();
      const int wanted = std::min(total_slots(hosts), o_.max_ranks);
      if (wanted != wanted_ || describe(hosts) != describe(hosts_)) {
        if (wanted_ >= 0 && wanted != wanted_)
          change_note_ = "membership " + std::to_string(wanted_) + " -> " + std::to_string(wanted) +
                         " ranks (" + source + " hosts changed: " + describe(hosts) + ")";
        hosts_ = hosts;
        wanted_ = wanted;
      }
    } catch (const Error& e) {
      if (membership_error_ != e.what())
        say(std::string("membership not read, keeping the last: ") + e.what());
      membership_error_ = e.what();
      if (wanted_ < 0) wanted_ = 0;
    }
  }

  // The rank count to launch on: the membership's, lowered to one the global batch splits over.
  int launchable() const {
    if (wanted_ < o_.min_ranks) return 0;
    if (global_batch_ == 0) return wanted_;
    return largest_compatible(global_batch_, accumulate_, o_.min_ranks, wanted_);
  }

  void launch(int ranks) {
    if (global_batch_ == 0) global_batch_ = config_batch_ * accumulate_ * ranks;
    const BatchSplit split = split_global_batch(global_batch_, accumulate_, ranks, o_.max_ranks);
    if (ranks != wanted_) {
      std::string sizes;
      for (int w : compatible_world_sizes(global_batch_, accumulate_, o_.max_ranks))
        sizes += (sizes.empty() ? "" : ", ") + std::to_string(w);
      say("the global batch " + std::to_string(global_batch_) + " does not split over " +
          std::to_string(wanted_) + " ranks (rank counts that do: " + sizes + "): launching on " +
          std::to_string(ranks));
    }
    {
      // the membership, its slots cut down to `ranks` in host order
      std::vector<Host> use;
      int left = ranks;
      for (const Host& h : hosts_)
        if (left > 0 && h.slots > 0) {
          use.push_back({h.name, std::min(h.slots, left)});
          left -= use.back().slots;
        }
      std::ofstream(hostfile_out_, std::ios::trunc) << to_hostfile(use);
    }
    std::vector<std::string> argv = {
        o_.mpirun, "--hostfile", hostfile_out_, "-np", std::to_string(ranks), "-x", "STRATA_COMM_TIMEOUT"};
    argv.insert(argv.end(), o_.mpirun_args.begin(), o_.mpirun_args.end());
    argv.insert(argv.end(), o_.train.begin(), o_.train.end());
    argv.push_back("data.batch_size=" + std::to_string(split.batch));
    argv.push_back("trainer.accumulate=" + std::to_string(split.accumulate));
    argv.push_back("checkpoint.resume=auto");
    say("launching " + std::to_string(ranks) + " ranks on " + describe(hosts_) + " (data.batch_size=" +
        std::to_string(split.batch) + " trainer.accumulate=" + std::to_string(split.accumulate) +
        ", global batch " + std::to_string(global_batch_) +
        (split.batch > config_batch_ ? "; above the config's data.batch_size " + std::to_string(config_batch_)
                                     : "") +
        ")");
    const pid_t pid = ::fork();
    if (pid < 0) throw Error(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
      ::setpgid(0, 0);  // a Ctrl-C at the terminal reaches the supervisor, which passes it on
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      sigaction(SIGTERM, &dfl, nullptr);
      sigaction(SIGINT, &dfl, nullptr);
      std::vector<char*> cargv;
      for (std::string& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      ::execvp(cargv[0], cargv.data());
      std::fprintf(stderr, "strata-elastic: cannot run %s: %s\n", cargv[0], std::strerror(errno));
      std::_Exit(127);
    }
    job_ = pid;
    adopted_ = false;
    for (int i = 0; i < 100 && (job_ticks_ = start_ticks(pid)) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    running_ranks_ = ranks;
    stopping_ = Stop::none;
    grow_since_ = -1;
    write_state(state_path_, {job_, job_ticks_, global_batch_, running_ranks_, restarts_});
  }

  // The job's exit status once it has ended (-1 for an adopted job: not known).
  std::optional<int> job_ended() {
    if (!adopted_) {
      int ws = 0;
      const pid_t r = ::waitpid(job_, &ws, WNOHANG);
      if (r == job_) return exit_status(ws);
      return std::nullopt;
    }
    if (start_ticks(job_) == job_ticks_) return std::nullopt;
    return -1;
  }

  void stop_job(const std::string& why) {
    say(why);
    ::kill(job_, SIGUSR1);  // every rank finishes its step; they write one checkpoint and exit
    stop_sent_ = now_s();
    forced_ = 0;
  }

  std::optional<int> tick() {
    read_membership();
    if (job_ > 0) {
      if (std::optional<int> rc = job_ended()) return after_exit(*rc);
      if (g_signal && stopping_ != Stop::term) {
        stopping_ = Stop::term;
        stop_job("signal " + std::to_string(g_signal) + ": stopping the job with a checkpoint (no relaunch)");
      }
      if (stopping_ != Stop::none) {
        // a job that does not stop: SIGTERM to mpirun (it tears the job down), then SIGKILL
        if (forced_ == 0 && now_s() - stop_sent_ > o_.stop_timeout_s) {
          say("the job has not stopped " + seconds(o_.stop_timeout_s) +
              " s after SIGUSR1: SIGTERM to mpirun");
          ::kill(job_, SIGTERM);
          forced_ = now_s();
        } else if (forced_ > 0 && now_s() - forced_ > o_.stop_timeout_s) {
          say("mpirun still runs: SIGKILL");
          ::kill(job_, SIGKILL);
          forced_ = now_s() + 1e9;
        }
        return std::nullopt;
      }
      const int target = launchable();
      if (!change_note_.empty()) {
        const std::string note = change_note_;
        change_note_.clear();
        if (target < running_ranks_) {
          stopping_ = Stop::change;
          stop_job(note + "; stopping the job to relaunch on " +
                   (target > 0 ? std::to_string(target) + " ranks" : "the next membership of enough ranks") +
                   " from a checkpoint of its step");
          return std::nullopt;
        }
        if (target > running_ranks_) {
          say(note + "; growing at the next checkpoint");
          grow_since_ = now_s();
          grow_from_ckpt_ = newest_checkpoint(train_.run_dir);
        } else {
          say(note + (grow_since_ >= 0 ? "; no growth after all" : "; the job goes on"));
          grow_since_ = -1;
        }
      }
      if (grow_since_ >= 0) {
        const std::string ck = newest_checkpoint(train_.run_dir);
        const bool new_ck = !ck.empty() && ck != grow_from_ckpt_;
        if (new_ck || now_s() - grow_since_ >= o_.grow_after_s) {
          stopping_ = Stop::change;
          stop_job(new_ck ? "the run wrote " + ck + ": stopping it to relaunch on " + std::to_string(target) +
                                " ranks"
                          : "--grow-after-s passed: stopping the job to relaunch on " +
                                std::to_string(target) + " ranks");
        }
      }
      return std::nullopt;
    }
    // no job running
    if (g_signal) {
      say("signal " + std::to_string(g_signal) + " with no job running: exiting");
      return 128 + g_signal;
    }
    if (!change_note_.empty()) {
      say(change_note_);
      change_note_.clear();
    }
    if (now_s() < not_before_) return std::nullopt;
    const int target = launchable();
    if (target == 0) {
      const std::string why = wanted_ < o_.min_ranks
                                  ? "waiting: the membership gives " + std::to_string(wanted_) +
                                        " rank(s), below --min-ranks " + std::to_string(o_.min_ranks)
                                  : "waiting: the global batch " + std::to_string(global_batch_) +
                                        " splits over no rank count from --min-ranks to " +
                                        std::to_string(wanted_);
      if (why != waiting_note_) say(why);
      waiting_note_ = why;
      return std::nullopt;
    }
    waiting_note_.clear();
    launch(target);
    return std::nullopt;
  }

  std::optional<int> after_exit(int rc) {
    const Stop stopping = stopping_;
    const int ran = running_ranks_;
    job_ = 0;
    running_ranks_ = 0;
    stopping_ = Stop::none;
    grow_since_ = -1;
    const std::string status =
        rc < 0 ? "status not known to a restarted supervisor" : "mpirun exit " + std::to_string(rc);
    write_state(state_path_, {0, 0, global_batch_, 0, restarts_});
    if (rc == 0 || finished()) {
      say(rc <= 0 ? "the run finished (" + status + ")"
                  : "the run has finished (its summary.json is there), though this job ended with " + status);
      return 0;
    }
    if (stopping == Stop::term) {
      say("the job stopped (" + status + "); resume it with the same command");
      return rc < 0 ? 128 + g_signal : rc;
    }
    if (stopping == Stop::change) {
      say("the job stopped for the membership change (" + status + ")");
      return std::nullopt;  // the next tick launches on the new membership
    }
    if (rc < 0) {
      say("the adopted job ended (" + status +
          "), without a summary.json: relaunching from the last checkpoint");
      return std::nullopt;
    }
    restarts_++;
    write_state(state_path_, {0, 0, global_batch_, 0, restarts_});
    if (restarts_ > o_.max_restarts) {
      say("error: the job died " + std::to_string(restarts_) + " time(s), more than --max-restarts " +
          std::to_string(o_.max_restarts) + " allows; the last death: " + status + " on " +
          std::to_string(ran) + " ranks");
      return rc;
    }
    const int target = launchable();
    say("rank died (" + status + "): restarting on " +
        (target > 0 ? std::to_string(target) + " ranks" : "the next membership of enough ranks") +
        " from the last checkpoint (restart " + std::to_string(restarts_) + " of " +
        std::to_string(o_.max_restarts) + ", after " + seconds(o_.backoff_s) + " s)");
    not_before_ = now_s() + o_.backoff_s;
    return std::nullopt;
  }

  std::string metrics() const {
    const std::string job = fs::path(train_.run_dir).filename().string();
    auto series = [&](const char* name, const char* type, const char* help, long v) {
      return std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name +
             "{job=\"" + job + "\"} " + std::to_string(v) + "\n";
    };
    return series("strata_elastic_ranks_wanted", "gauge", "Ranks the membership gives, up to --max-ranks",
                  wanted_.load() < 0 ? 0 : wanted_.load()) +
           series("strata_elastic_ranks_running", "gauge", "Ranks of the running job (0 when none runs)",
                  running_ranks_.load()) +
           series("strata_elastic_restarts_total", "counter", "Relaunches after the job died",
                  restarts_.load());
  }

  enum class Stop { none, change, term };
  const SupervisorOptions& o_;
  TrainCommand train_;
  int64_t config_batch_ = 0, accumulate_ = 1, global_batch_ = 0;
  std::string state_path_, hostfile_out_;
  std::vector<Host> hosts_;
  std::atomic<int> wanted_{-1}, running_ranks_{0}, restarts_{0};
  std::string change_note_, membership_error_, waiting_note_, grow_from_ckpt_;
  pid_t job_ = 0;
  uint64_t job_ticks_ = 0;
  bool adopted_ = false;
  Stop stopping_ = Stop::none;
  double stop_sent_ = 0, forced_ = 0, grow_since_ = -1, not_before_ = 0;
  std::unique_ptr<MetricsEndpoint> endpoint_;
};

}  // namespace

int supervise(const SupervisorOptions& o) { return Supervisor(o).run(); }

}  // namespace strata::elastic
