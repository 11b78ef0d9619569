// The child runs through posix_spawnp (no shell); its stdout and stderr are
// drained together with poll() so a chatty stderr cannot block the child
// before it has written its JSON.
#include "data/store/credential_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

extern char** environ;

namespace strata::data {
namespace {

struct ProcessResult {
  int status = 0;  // from waitpid
  std::string out, err;
};

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& what) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw CredentialError(what + ": pipe: " + std::strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw CredentialError(what + ": pipe: " + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  // The child starts with no signal blocked and default dispositions (strata-train
  // blocks its stop signals in every thread, and a blocked mask is inherited).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, stops;
  sigemptyset(&none);
  sigemptyset(&stops);
  for (int s : {SIGTERM, SIGINT, SIGUSR1}) sigaddset(&stops, s);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &stops);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  const int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ProcessResult r;
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    throw CredentialError(what + ": cannot run '" + argv[0] + "': " + std::strerror(rc));
  }
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  for (int open = 2; open > 0;) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        if (sinks[i]->size() < (1u << 20)) sinks[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  while (::waitpid(pid, &r.status, 0) < 0 && errno == EINTR) {
  }
  return r;
}

std::string exit_description(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "wait status " + std::to_string(status);
}

std::string string_field(const nlohmann::json& j, const char* name, bool required, const std::string& where) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) {
    if (required) throw CredentialError(where + ": output has no \"" + std::string(name) + "\"");
    return "";
  }
  if (!it->is_string() || (required && it->get<std::string>().empty()))
    throw CredentialError(where + ": \"" + std::string(name) + "\" must be a non-empty string");
  return it->get<std::string>();
}

}  // namespace

std::vector<std::string> split_command_line(const std::string& command, const std::string& where) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (quote == '\'') {
      if (c == '\'')
        quote = 0;
      else
        word += c;
    } else if (quote == '"') {
      if (c == '"') {
        quote = 0;
      } else if (c == '\\' && i + 1 < command.size() && std::strchr("\"\\$`", command[i + 1])) {
        word += command[++i];
      } else {
        word += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < command.size()) {
      word += command[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote) throw ConfigError(where + ": credential_process '" + command + "' has an unterminated " + quote);
  if (in_word) words.push_back(word);
  if (words.empty()) throw ConfigError(where + ": credential_process is empty");
  return words;
}

AwsCredentials parse_credential_process_output(const std::string& json, const std::string& where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    throw CredentialError(where + ": output is not JSON (" + e.what() + "): '" + json.substr(0, 200) + "'");
  }
  if (!j.is_object()) throw CredentialError(where + ": output is not a JSON object");
  auto version = j.find("Version");
  if (version == j.end() || !version->is_number_integer() || version->get<int>() != 1)
    throw CredentialError(where + ": \"Version\" must be 1, got " +
                          (version == j.end() ? std::string("nothing") : version->dump()));
  AwsCredentials c;
  c.access_key = string_field(j, "AccessKeyId", true, where);
  c.secret_key = string_field(j, "SecretAccessKey", true, where);
  c.session_token = string_field(j, "SessionToken", false, where);
  const std::string expiration = string_field(j, "Expiration", false, where);
  if (!expiration.empty()) c.expires = parse_iso8601(expiration, where);
  return c;
}

ProcessCredentialProvider::ProcessCredentialProvider(std::string command, std::string where,
                                                     RefreshPolicy policy)
    : RefreshingCredentialProvider(std::move(policy)),
      command_(std::move(command)),
      argv_(split_command_line(command_, where)),
      where_(std::move(where)) {}

// The program only: describe() goes into every 403 message, and arguments may
// carry secrets. A failure of the command itself names it whole.
std::string ProcessCredentialProvider::describe() const {
  return "credential_process of " + where_ + " (" + argv_[0] + ")";
}

AwsCredentials ProcessCredentialProvider::fetch() {
  const std::string what = "credential_process of " + where_ + " (" + command_ + ")";
  ProcessResult r = run_process(argv_, what);
  if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0) {
    while (!r.err.empty() && (r.err.back() == '\n' || r.err.back() == '\r')) r.err.pop_back();
    throw CredentialError(what + " failed with " + exit_description(r.status) +
                          (r.err.empty() ? std::string() : ": " + r.err.substr(0, 2000)));
  }
  return parse_credential_process_output(r.out, what);
}

}  // namespace strata::data
