// A TLS endpoint in front of the test RGW for one test: openssl makes a CA and a
// server certificate for "localhost" (and a second, unrelated CA), stunnel4
// terminates TLS on a free 127.0.0.1 port and forwards to RGW. Stopped by pid.
#pragma once
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "test_util.h"

namespace strata::data::testing {

inline void run_or_throw(const std::string& cmd) {
  if (std::system((cmd + " >/dev/null 2>&1").c_str()) != 0) throw std::runtime_error("failed: " + cmd);
}

inline int free_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("no free port");
  ::close(s);
  return ntohs(a.sin_port);
}

inline bool accepts(int port) {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(s);
  return ok;
}

class TlsEndpoint {
 public:
  // `target` is the RGW's "127.0.0.1:port".
  TlsEndpoint(const std::filesystem::path& dir, const std::string& target) : dir_(dir) {
    if (std::system("command -v stunnel4 >/dev/null 2>&1") != 0)
      throw std::runtime_error("stunnel4 not found: scripts/test.sh installs it (apt-get install stunnel4)");
    const std::string d = dir.string();
    const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    for (const char* ca : {"ca", "other-ca"})
      run_or_throw("openssl req -x509" + ec + " -days 2 -subj /CN=strata-test-" + ca + " -keyout " + d + "/" +
                   ca + ".key -out " + d + "/" + ca + ".pem");
    write_file(dir / "san.ext", "subjectAltName=DNS:localhost\n");
    run_or_throw("openssl req" + ec + " -subj /CN=localhost -keyout " + d + "/server.key -out " + d +
                 "/server.csr");
    run_or_throw("openssl x509 -req -days 2 -in " + d + "/server.csr -CA " + d + "/ca.pem -CAkey " + d +
                 "/ca.key -CAcreateserial -extfile " + d + "/san.ext -out " + d + "/server.pem");
    port_ = free_port();
    write_file(dir / "stunnel.conf",
               "foreground = yes\npid =\n[rgw]\naccept = 127.0.0.1:" + std::to_string(port_) +
                   "\nconnect = " + target + "\ncert = " + d + "/server.pem\nkey = " + d + "/server.key\n");
    pid_ = ::fork();
    if (pid_ == 0) {
      const std::string log = d + "/stunnel.log";
      std::freopen(log.c_str(), "w", stderr);
      std::freopen(log.c_str(), "a", stdout);
      ::execlp("stunnel4", "stunnel4", (d + "/stunnel.conf").c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 200 && !accepts(port_); ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("stunnel4 exited; see " + d + "/stunnel.log");
      }
      ::usleep(50 * 1000);
    }
    if (!accepts(port_)) throw std::runtime_error("stunnel4 not listening; see " + d + "/stunnel.log");
  }
  ~TlsEndpoint() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  int port() const { return port_; }
  std::string ca() const { return (dir_ / "ca.pem").string(); }
  std::string other_ca() const { return (dir_ / "other-ca.pem").string(); }

 private:
  std::filesystem::path dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace strata::data::testing
