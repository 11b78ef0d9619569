// strata-proxy: a TCP proxy in front of an HTTP server (the test RGW) that adds
// latency and injects failures, for tests and benchmarks of the S3 client.
// One thread per client connection; requests are parsed just enough (request
// line, headers, Content-Length body) to count them on keep-alive connections.
// Responses are parsed only to count them: each forwarded request's method and
// the body bytes of its response (Content-Length or chunked), so that a
// benchmark measures every reader's GETs and bytes at the same place.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "apps/command_line.h"

namespace {

const char* kDescription = R"(Forwards TCP connections from --listen to --target (an HTTP/1.1 server such as
the test RGW). Prints "listening on PORT" once ready (PORT 0 picks a free port
and prints it), then serves until SIGTERM or SIGINT. Requests must carry their
body with Content-Length (chunked request bodies are answered 501). Counters are
printed to stderr at exit. Forwarded requests are counted per method with the
body bytes of their responses; GET /.strata-proxy/stats answers those counters
as JSON (itself neither forwarded, delayed nor counted), and --stats-file writes
them at exit.)";

struct Config {
  std::string listen_host = "127.0.0.1", target_host = "127.0.0.1";
  int listen_port = -1, target_port = -1;
  int delay_ms = 0, pass_first = 0, fail_first = 0, fail_status = 503, drop_first = 0, truncate_first = 0;
  long truncate_bytes = 4096;
  double stream_mbps = 0;  // 0: unpaced
  int fault_every = 0, stall_ms = 60000;
  std::vector<std::string> faults{"503"};  // a status, "reset", "stall" or "truncate"
  std::string log_path;                    // --log: one line per request received
  std::string stats_file;
};

Config cfg;
std::atomic<int> request_count{0}, failed{0}, dropped{0}, truncated{0}, stalled{0}, forwarded{0};
std::atomic<bool> stopping{false};
std::FILE* request_log = nullptr;
std::mutex request_log_mu;

// "N METHOD TARGET": tests count the GETs of each object from it while the
// proxy runs, so each line is flushed as it is written.
void log_request(int n, const std::string& head) {
  if (!request_log) return;
  const std::string line = head.substr(0, head.find("\r\n"));
  std::lock_guard<std::mutex> lock(request_log_mu);
  std::fprintf(request_log, "%d %s\n", n, line.c_str());
  std::fflush(request_log);
}

void on_signal(int) { stopping = true; }

// Per method: forwarded requests, and the bytes of their responses' bodies and of
// the whole responses (status line and headers included).
struct MethodCounts {
  int64_t requests = 0, body_bytes = 0, response_bytes = 0;
};
std::mutex counts_mu;
std::map<std::string, MethodCounts> counts;

void count(const std::string& method, int64_t requests, int64_t body, int64_t response) {
  std::lock_guard<std::mutex> lock(counts_mu);
  auto& c = counts[method];
  c.requests += requests, c.body_bytes += body, c.response_bytes += response;
}

std::string stats_json() {
  std::lock_guard<std::mutex> lock(counts_mu);
  std::string j = "{\"methods\": {";
  bool first = true;
  for (auto& [m, c] : counts) {
    j += (first ? "" : ", ") + std::string("\"") + m + "\": {\"requests\": " + std::to_string(c.requests) +
         ", \"body_bytes\": " + std::to_string(c.body_bytes) +
         ", \"response_bytes\": " + std::to_string(c.response_bytes) + "}";
    first = false;
  }
  return j + "}, \"requests\": " + std::to_string(request_count.load()) + "}\n";
}

bool parse_hostport(const std::string& s, std::string& host, int& port) {
  const auto c = s.rfind(':');
  if (c == std::string::npos) return false;
  host = s.substr(0, c);
  port = std::atoi(s.c_str() + c + 1);
  return !host.empty() && port >= 0 && port < 65536;
}

bool send_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

void sleep_ms(int ms) {
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

int connect_to(const std::string& host, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (fd < 0 || ::inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Follows the server->client byte stream of one connection, response by response,
// and counts each body's bytes against the method of the request it answers.
class ResponseCounter {
 public:
  void expect(const std::string& method) {
    std::lock_guard<std::mutex> lock(mu_);
    methods_.push_back(method);
  }
  void feed(const char* p, size_t n) {
    while (n > 0) {
      size_t used = 0;
      switch (state_) {
        case kHead:
          used = head(p, n);
          break;
        case kBody:
          used = static_cast<size_t>(std::min<int64_t>(left_, static_cast<int64_t>(n)));
          body_ += static_cast<int64_t>(used);
          if ((left_ -= static_cast<int64_t>(used)) == 0) finished_ = true;
          break;
        case kChunkLine:
          used = chunk_line(p, n);
          break;
        case kChunkData:
          used = static_cast<size_t>(std::min<int64_t>(left_, static_cast<int64_t>(n)));
          body_ += static_cast<int64_t>(used);
          if ((left_ -= static_cast<int64_t>(used)) == 0) state_ = kChunkLine;
          break;
        case kTrailer:
          used = trailer(p, n);
          break;
        case kUntilClose:
          used = n, body_ += static_cast<int64_t>(n);
          break;
      }
      wire_ += static_cast<int64_t>(used);
      p += used, n -= used;
      if (finished_) done();
    }
  }
  void close() {  // a response cut by the connection's end still counts
    if (state_ != kHead || !line_.empty()) done();
  }

 private:
  enum State { kHead, kBody, kChunkLine, kChunkData, kTrailer, kUntilClose };
  size_t head(const char* p, size_t n) {
    const size_t old = line_.size();
    line_.append(p, n);
    const size_t end = line_.find("\r\n\r\n");
    if (end == std::string::npos) return n;
    const size_t used = end + 4 - old;
    const std::string h = lower(line_.substr(0, end + 4));
    line_.clear();
    const int status = h.size() > 12 ? std::atoi(h.c_str() + 9) : 0;
    if (status >= 100 && status < 200) return used;  // 100 Continue: the final answer follows
    {
      std::lock_guard<std::mutex> lock(mu_);
      method_ = methods_.empty() ? "?" : methods_.front();
      if (!methods_.empty()) methods_.pop_front();
    }
    const auto cl = h.find("\r\ncontent-length:");
    if (method_ == "HEAD" || status == 204 || status == 304 ||
        (cl != std::string::npos && std::strtoll(h.c_str() + cl + 17, nullptr, 10) == 0)) {
      finished_ = true;
    } else if (cl != std::string::npos) {
      left_ = std::strtoll(h.c_str() + cl + 17, nullptr, 10), state_ = kBody;
    } else if (h.find("\r\ntransfer-encoding: chunked") != std::string::npos) {
      state_ = kChunkLine;
    } else {
      state_ = kUntilClose;
    }
    return used;
  }
  size_t chunk_line(const char* p, size_t n) {
    const size_t old = line_.size();
    line_.append(p, n);
    const size_t end = line_.find("\r\n", old > 0 ? old - 1 : 0);
    if (end == std::string::npos) return n;
    const size_t used = end + 2 - old;
    if (end == 0) {  // the CRLF closing the previous chunk's data
      line_.clear();
      return used;
    }
    const int64_t size = std::strtoll(line_.c_str(), nullptr, 16);
    line_.clear();
    if (size == 0)
      state_ = kTrailer;
    else
      left_ = size, state_ = kChunkData;
    return used;
  }
  size_t trailer(const char* p, size_t n) {  // trailer lines, then an empty line
    const size_t old = line_.size();
    line_.append(p, n);
    const size_t end = line_.compare(0, 2, "\r\n") == 0 ? 0 : line_.find("\r\n\r\n");
    if (end == std::string::npos) return n;
    line_.clear();
    finished_ = true;
    return (end == 0 ? 2 : end + 4) - old;
  }
  void done() {
    count(method_, 1, body_, wire_);
    body_ = wire_ = 0, state_ = kHead, method_ = "?", finished_ = false;
  }

  std::mutex mu_;
  std::deque<std::string> methods_;
  std::string method_ = "?", line_;
  State state_ = kHead;
  bool finished_ = false;
  int64_t left_ = 0, body_ = 0, wire_ = 0;
};

// One client connection. `pending_delay` tells the server->client pump to sleep
// before the next bytes it forwards (the start of a response).
class Connection {
 public:
  explicit Connection(int client) : client_(client) {}

  void run() {
    std::string buf;
    char tmp[65536];
    for (;;) {
      size_t end;
      while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
        const ssize_t r = ::recv(client_, tmp, sizeof tmp, 0);
        if (r <= 0) return finish();
        buf.append(tmp, static_cast<size_t>(r));
      }
      const std::string head = buf.substr(0, end + 4);
      buf.erase(0, end + 4);
      const std::string h = lower(head);
      size_t body = 0;
      if (auto p = h.find("\r\ncontent-length:"); p != std::string::npos)
        body = std::strtoull(h.c_str() + p + 17, nullptr, 10);
      if (h.rfind("get /.strata-proxy/stats ", 0) == 0) {  // answered here, not counted
        if (!skip(buf, body)) return finish();
        const std::string j = stats_json();
        const std::string resp = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                                 std::to_string(j.size()) + "\r\nConnection: keep-alive\r\n\r\n" + j;
        std::lock_guard<std::mutex> lock(write_mu_);
        if (!send_all(client_, resp.data(), resp.size())) return finish();
        continue;
      }
      const bool expect = h.find("\r\nexpect: 100-continue") != std::string::npos;
      const int total = ++request_count;
      log_request(total, head);
      const int n = total - cfg.pass_first;  // <= 0: passed untouched
      // the rotation of --faults on every --fault-every-th request
      const std::string fault =
          cfg.fault_every > 0 && total % cfg.fault_every == 0
              ? cfg.faults[static_cast<size_t>(total / cfg.fault_every - 1) % cfg.faults.size()]
              : std::string();
      if (h.find("\r\ntransfer-encoding: chunked") != std::string::npos) {
        reply(501, "NotImplemented", "strata-proxy does not forward chunked request bodies", true);
        return finish();
      }
      if (fault == "reset") {
        ++dropped;
        if (!expect) skip(buf, body);
        return finish();
      }
      if (!fault.empty() && std::isdigit(static_cast<unsigned char>(fault[0]))) {
        ++failed;
        if (!expect && !skip(buf, body)) return finish();
        const int status = std::atoi(fault.c_str());
        reply(status, status == 503 ? "SlowDown" : "InternalError", "failure injected by strata-proxy",
              expect);
        if (expect) return finish();
        continue;
      }
      if (fault == "stall") ++stalled, pending_stall_ = true;
      if (fault == "truncate") ++truncated, truncate_left_ = cfg.truncate_bytes;
      if (n > 0 && n <= cfg.fail_first) {
        ++failed;
        // With Expect: 100-continue the client never sends the body after an
        // early final answer, so the connection cannot be reused: close it.
        if (!expect && !skip(buf, body)) return finish();
        reply(cfg.fail_status, cfg.fail_status == 503 ? "SlowDown" : "InjectedFailure",
              "failure injected by strata-proxy", expect);
        if (expect) return finish();
        continue;
      }
      if (n > cfg.fail_first && n <= cfg.fail_first + cfg.drop_first) {
        ++dropped;
        if (!expect) skip(buf, body);
        return finish();
      }
      ++forwarded;
      const int t = n - cfg.fail_first - cfg.drop_first;
      if (t > 0 && t <= cfg.truncate_first) ++truncated, truncate_left_ = cfg.truncate_bytes;
      if (server_ < 0 && !open_server()) {
        reply(502, "BadGateway", "strata-proxy cannot connect to the target", true);
        return finish();
      }
      counter_.expect(head.substr(0, head.find(' ')));
      sleep_ms(cfg.delay_ms);
      pending_delay_ = true;
      if (!send_all(server_, head.data(), head.size())) return finish();
      // Stream the body (what is already buffered, then the rest as it comes).
      size_t left = body;
      const size_t have = std::min(left, buf.size());
      if (!send_all(server_, buf.data(), have)) return finish();
      buf.erase(0, have);
      left -= have;
      while (left > 0) {
        const ssize_t r = ::recv(client_, tmp, std::min(sizeof tmp, left), 0);
        if (r <= 0 || !send_all(server_, tmp, static_cast<size_t>(r))) return finish();
        left -= static_cast<size_t>(r);
      }
    }
  }

 private:
  bool open_server() {
    server_ = connect_to(cfg.target_host, cfg.target_port);
    if (server_ < 0) return false;
    pump_ = std::thread([this] {
      char b[65536];
      using Clock = std::chrono::steady_clock;
      Clock::time_point due = Clock::now();  // when the bytes forwarded so far are due at the pace
      for (;;) {
        const ssize_t r = ::recv(server_, b, sizeof b, 0);
        if (r <= 0) break;
        if (pending_delay_.exchange(false)) sleep_ms(cfg.delay_ms);
        if (pending_stall_.exchange(false)) sleep_ms(cfg.stall_ms);  // the client may give up meanwhile
        // The client waits for this response before its next request, so these
        // bytes are the truncated request's.
        const long cut = truncate_left_.load();
        const size_t n = cut >= 0 ? std::min<size_t>(static_cast<size_t>(r), static_cast<size_t>(cut))
                                  : static_cast<size_t>(r);
        {
          std::lock_guard<std::mutex> lock(write_mu_);
          if (!send_all(client_, b, n)) break;
        }
        counter_.feed(b, n);
        if (cfg.stream_mbps > 0) {
          due = std::max(due, Clock::now() - std::chrono::milliseconds(10)) +  // idle time earns no credit
                std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double>(static_cast<double>(n) / (cfg.stream_mbps * 1e6)));
          std::this_thread::sleep_until(due);
        }
        if (cut >= 0 && (truncate_left_ -= static_cast<long>(n)) == 0) break;
      }
      counter_.close();
      ::shutdown(client_, SHUT_RDWR);  // the server closed: so does the client side
    });
    return true;
  }

  // Reads and discards `n` body bytes (part of them already in buf).
  bool skip(std::string& buf, size_t n) {
    const size_t have = std::min(n, buf.size());
    buf.erase(0, have);
    n -= have;
    char tmp[65536];
    while (n > 0) {
      const ssize_t r = ::recv(client_, tmp, std::min(sizeof tmp, n), 0);
      if (r <= 0) return false;
      n -= static_cast<size_t>(r);
    }
    return true;
  }

  void reply(int status, const std::string& code, const std::string& message, bool close) {
    const std::string id = "strata-proxy-" + std::to_string(request_count.load());
    const std::string body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>" + code +
                             "</Code><Message>" + message + "</Message><RequestId>" + id +
                             "</RequestId></Error>";
    const std::string resp = "HTTP/1.1 " + std::to_string(status) +
                             " Injected\r\nContent-Type: application/xml\r\n" + "x-amz-request-id: " + id +
                             "\r\nContent-Length: " + std::to_string(body.size()) +
                             "\r\nConnection: " + (close ? "close" : "keep-alive") + "\r\n\r\n" + body;
    std::lock_guard<std::mutex> lock(write_mu_);
    send_all(client_, resp.data(), resp.size());
  }

  void finish() {
    ::shutdown(client_, SHUT_RDWR);
    if (server_ >= 0) ::shutdown(server_, SHUT_RDWR);
    if (pump_.joinable()) pump_.join();
    if (server_ >= 0) ::close(server_);
    ::close(client_);
  }

  int client_, server_ = -1;
  std::thread pump_;
  std::mutex write_mu_;
  std::atomic<bool> pending_delay_{false}, pending_stall_{false};
  std::atomic<long> truncate_left_{-1};
  ResponseCounter counter_;  // >= 0: response bytes still to forward before cutting
};

// Fills cfg. 0: serve; -1: --help or --version was printed; else a usage error's exit code.
int parse_args(int argc, char** argv) {
  std::string listen, target;
  CLI::App app(kDescription, "strata-proxy");
  strata::cli::add_version_flag(app);
  app.add_option("--listen", listen, "Address to listen on (PORT 0: a free one)")
      ->required()
      ->option_text("HOST:PORT");
  app.add_option("--target", target, "The HTTP server to forward to")->required()->option_text("HOST:PORT");
  app.add_option(
         "--delay-ms", cfg.delay_ms,
         "Sleep N ms before forwarding the first bytes of each request to the target, and N ms before "
         "forwarding the first bytes of each response to the client: about 2*N ms of extra latency per "
         "request")
      ->option_text("N");
  app.add_option(
         "--fail-first", cfg.fail_first,
         "Answer the first N requests (counted over all connections) with --fail-status and an S3 XML "
         "error body, without forwarding them; the connection stays open")
      ->option_text("N");
  app.add_option("--fail-status", cfg.fail_status, "Status for --fail-first (503: code SlowDown)")
      ->check(CLI::Range(100, 599))
      ->capture_default_str();
  app.add_option("--drop-first", cfg.drop_first,
                 "After the --fail-first ones, close the connection of the next N requests after reading the "
                 "request, answering nothing")
      ->option_text("N");
  app.add_option("--pass-first", cfg.pass_first,
                 "Forward the first N requests untouched; the failures count from request N+1")
      ->option_text("N");
  app.add_option("--truncate-first", cfg.truncate_first,
                 "After those, forward the next N requests but cut their response after --truncate-bytes "
                 "bytes (status line and headers included) and close the connection")
      ->option_text("N");
  app.add_option("--truncate-bytes", cfg.truncate_bytes,
                 "Bytes of a truncated response that reach the client")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--stream-mbps", cfg.stream_mbps,
                 "Pace every connection's responses to R MB/s (1e6 bytes), as a long-distance TCP stream is "
                 "capped by its window over the round trip; several connections get R each")
      ->option_text("R");
  app.add_option(
         "--fault-every", cfg.fault_every,
         "Besides the above, every K-th request (counted over all connections) gets the next fault of "
         "--faults, in rotation")
      ->option_text("K");
  app.add_option("--faults", cfg.faults,
                 "Comma-separated: an HTTP status (503 is SlowDown), reset (close without answering), stall "
                 "(hold the response for --stall-ms), truncate (cut it after --truncate-bytes)")
      ->delimiter(',')
      ->check([](const std::string& f) {
        const int status = std::atoi(f.c_str());
        return f == "reset" || f == "stall" || f == "truncate" || (status >= 100 && status <= 599)
                   ? std::string()
                   : "'" + f + "' is none of an HTTP status, reset, stall, truncate";
      })
      ->capture_default_str();
  app.add_option("--stats-file", cfg.stats_file,
                 "At exit, write the per-method counters (requests, response body bytes) there as JSON")
      ->option_text("PATH");
  app.add_option("--stall-ms", cfg.stall_ms, "How long a stalled response is held")->capture_default_str();
  app.add_option("--log", cfg.log_path,
                 "Append one line per request received, faulted or not: its number and its request line "
                 "(METHOD TARGET HTTP/1.1)")
      ->option_text("FILE");
  if (int rc = strata::cli::parse(app, argc, argv); rc >= 0) return rc == 0 ? -1 : rc;
  for (auto [opt, text, host, port] : {std::tuple{"--listen", &listen, &cfg.listen_host, &cfg.listen_port},
                                       std::tuple{"--target", &target, &cfg.target_host, &cfg.target_port}})
    if (!parse_hostport(*text, *host, *port))
      return std::fprintf(stderr, "strata-proxy: %s needs HOST:PORT, got '%s'\n", opt, text->c_str()), 2;
  if (cfg.target_port == 0) return std::fprintf(stderr, "strata-proxy: --target needs a port > 0\n"), 2;
  if (!cfg.log_path.empty() && !(request_log = std::fopen(cfg.log_path.c_str(), "a")))
    return std::fprintf(stderr, "strata-proxy: cannot open --log file '%s': %s\n", cfg.log_path.c_str(),
                        std::strerror(errno)),
           2;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (int rc = parse_args(argc, argv)) return rc < 0 ? 0 : rc;  // -1: --help or --version done
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  const int ls = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(cfg.listen_port));
  socklen_t len = sizeof a;
  if (::inet_pton(AF_INET, cfg.listen_host.c_str(), &a.sin_addr) != 1 ||
      ::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(ls, 128) != 0 ||
      ::getsockname(ls, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    std::fprintf(stderr, "strata-proxy: cannot listen on %s:%d: %s\n", cfg.listen_host.c_str(),
                 cfg.listen_port, std::strerror(errno));
    return 1;
  }
  std::printf("listening on %d\n", ntohs(a.sin_port));
  std::fflush(stdout);
  while (!stopping) {
    pollfd p{ls, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    const int c = ::accept(ls, nullptr, nullptr);
    if (c < 0) continue;
    ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::thread([c] {
      Connection conn(c);
      conn.run();
    }).detach();
  }
  std::fprintf(stderr,
               "strata-proxy: %d requests: %d forwarded (%d of them truncated, %d stalled), %d failed "
               "(injected), %d dropped\n",
               request_count.load(), forwarded.load(), truncated.load(), stalled.load(), failed.load(),
               dropped.load());
  if (!cfg.stats_file.empty()) std::ofstream(cfg.stats_file) << stats_json();
  return 0;
}
