// Runs build/bin/strata-proxy as a child process for a test and stops it (by
// its pid) when the test ends. The proxy picks a free port and prints it.
#pragma once
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace strata::data::testing {

class ProxyProcess {
 public:
  ProxyProcess(const std::string& target_hostport, std::vector<std::string> flags) {
    const char* bin = std::getenv("STRATA_BIN_DIR");
    if (!bin) throw std::runtime_error("STRATA_BIN_DIR is not set (run the test through ctest)");
    const std::string exe = std::string(bin) + "/strata-proxy";
    std::vector<std::string> args{exe, "--listen", "127.0.0.1:0", "--target", target_hostport};
    args.insert(args.end(), flags.begin(), flags.end());
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], 1);
      ::close(fds[0]);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(exe.c_str(), argv.data());
      _exit(127);
    }
    ::close(fds[1]);
    FILE* out = ::fdopen(fds[0], "r");
    char line[128] = {0};
    if (!std::fgets(line, sizeof line, out) || std::sscanf(line, "listening on %d", &port_) != 1)
      throw std::runtime_error("strata-proxy did not start (" + exe + ")");
    std::fclose(out);
  }
  ~ProxyProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace strata::data::testing
