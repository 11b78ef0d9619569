#include "distributed/elastic/membership.h"

#include <sstream>

#include "base/error.h"

namespace strata::elastic {
namespace {

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  const auto b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}

int parse_slots(const std::string& v, const std::string& where) {
  size_t used = 0;
  int n = -1;
  try {
    n = std::stoi(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || n < 0) throw ConfigError(where + ": slots '" + v + "' is not a count");
  return n;
}

void add(std::vector<Host>& hosts, const std::string& name, int slots) {
  for (Host& h : hosts)
    if (h.name == name) {
      h.slots += slots;
      return;
    }
  hosts.push_back({name, slots});
}

template <class ParseLine>
std::vector<Host> parse_lines(const std::string& text, const std::string& origin, ParseLine parse_line) {
  std::vector<Host> hosts;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const auto hash = line.find('#');
    line = trim(hash == std::string::npos ? line : line.substr(0, hash));
    if (line.empty()) continue;
    Host h = parse_line(line, origin + ":" + std::to_string(n));
    add(hosts, h.name, h.slots);
  }
  return hosts;
}

}  // namespace

std::vector<Host> parse_hostfile(const std::string& text, const std::string& origin) {
  return parse_lines(text, origin, [](const std::string& line, const std::string& where) {
    std::istringstream words(line);
    Host h;
    words >> h.name;
    std::string w;
    while (words >> w) {
      if (w.rfind("slots=", 0) == 0)
        h.slots = parse_slots(w.substr(6), where);
      else if (w.rfind("max_slots=", 0) != 0)  // max_slots: mpirun's business
        throw ConfigError(where + ": expected 'host slots=N', got '" + line + "'");
    }
    return h;
  });
}

std::vector<Host> parse_discovery(const std::string& text, const std::string& origin) {
  return parse_lines(text, origin, [](const std::string& line, const std::string& where) {
    if (line.find_first_of(" \t") != std::string::npos)
      throw ConfigError(where + ": expected 'host:slots', got '" + line + "'");
    const auto colon = line.rfind(':');
    if (colon == std::string::npos) return Host{line, 1};
    if (colon == 0) throw ConfigError(where + ": expected 'host:slots', got '" + line + "'");
    return Host{line.substr(0, colon), parse_slots(line.substr(colon + 1), where)};
  });
}

int total_slots(const std::vector<Host>& hosts) {
  int n = 0;
  for (const Host& h : hosts) n += h.slots;
  return n;
}

std::string to_hostfile(const std::vector<Host>& hosts) {
  std::string s;
  for (const Host& h : hosts)
    if (h.slots > 0) s += h.name + " slots=" + std::to_string(h.slots) + "\n";
  return s;
}

std::string describe(const std::vector<Host>& hosts) {
  std::string s;
  for (const Host& h : hosts) s += (s.empty() ? "" : ",") + h.name + ":" + std::to_string(h.slots);
  return s.empty() ? "no hosts" : s;
}

}  // namespace strata::elastic
