// The HTTP side of the Prometheus endpoint: a listening socket and one thread
// that answers GET /metrics with the text exposition format of a
// prometheus-cpp registry (and 404 otherwise), one request per connection.
//
// Why not prometheus-cpp-pull's Exposer: it serves through civetweb, whose
// threads Debian builds with a 100 KiB stack. glibc puts the static TLS of
// every loaded library on each thread's stack, and in a CUDA build (cuBLASLt
// alone holds 92 KiB of TLS, OpenBLAS 60 KiB) that leaves no room:
// pthread_create fails with EINVAL and the endpoint never starts. A scrape is
// a few kilobytes every few seconds, so one thread with the default stack does.
#pragma once
#include <atomic>
#include <functional>
#include <string>
#include <thread>

namespace strata {

class MetricsEndpoint {
 public:
  // Listens on address:port (port 0: a free one); `body` renders the page.
  // Throws ConfigError naming the address when it cannot listen.
  MetricsEndpoint(const std::string& address, int port, std::function<std::string()> body);
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;
  int port() const { return port_; }

 private:
  void serve();
  void answer(int fd);

  int listen_fd_ = -1, port_ = 0;
  std::function<std::string()> body_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace strata
