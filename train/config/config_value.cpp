// Schema helpers shared by the parser, the writer and the docs: key lookup with
// a nearest-key suggestion, ranges, and the YAML text of a value. Floats are
// written in their shortest exact form so that resolved.yaml parses back to the
// same bits.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include "base/error.h"
#include "train/config/schema.h"

namespace strata {
namespace {

std::string format_double(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, res.ptr);
  // A dot keeps the text a float for YAML 1.1 readers too (PyYAML): 1 -> 1.0, 5e-04 -> 5.0e-04.
  if (s.find_first_of(".n") == std::string::npos) {
    auto e = s.find('e');
    s.insert(e == std::string::npos ? s.size() : e, ".0");
  }
  return s;
}

std::string format_number(double v) {  // for ranges in docs: 1 not 1.0
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

// Plain scalars that YAML would read as something other than this string get quoted.
bool needs_quotes(const std::string& s) {
  if (s.empty()) return true;
  static const char* specials[] = {"true", "false", "yes", "no", "on", "off", "y", "n", "null", "~"};
  std::string lower = s;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* w : specials)
    if (lower == w) return true;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '/' ||
          c == ':'))
      return true;
  if (s.find(": ") != std::string::npos || s.back() == ':') return true;
  if (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' || s[0] == '.') return true;
  return false;
}

std::string quote(const std::string& s) {
  if (!needs_quotes(s)) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

template <class T, class F>
std::string flow_list(const std::vector<T>& v, F fmt) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + fmt(v[i]);
  return out + "]";
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

bool Range::contains(double v) const {
  if (lo && (lo_open ? !(v > *lo) : !(v >= *lo))) return false;
  if (hi && (hi_open ? !(v < *hi) : !(v <= *hi))) return false;
  return true;
}

std::string Range::describe() const {
  // Built by append: GCC 12 warns falsely (-Wrestrict, PR 105651) on operator+ chains here.
  std::string out;
  if (lo && hi) {
    out.append(lo_open ? "(" : "[").append(format_number(*lo)).append(", ").append(format_number(*hi));
    out.append(hi_open ? ")" : "]");
  } else if (lo) {
    out.append(lo_open ? "> " : ">= ").append(format_number(*lo));
  } else if (hi) {
    out.append(hi_open ? "< " : "<= ").append(format_number(*hi));
  }
  return out;
}

std::string ConfigKey::section() const {
  auto dot = path.find('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

std::string ConfigKey::type_name() const {
  std::string base;
  switch (kind) {
    case ValueKind::Int:
      base = "int";
      break;
    case ValueKind::Float:
      base = "float";
      break;
    case ValueKind::Bool:
      base = "bool";
      break;
    case ValueKind::String:
      base = "string";
      break;
    case ValueKind::Bytes:
      base = "bytes";
      break;
    case ValueKind::IntList:
      base = "list<int>";
      break;
    case ValueKind::FloatList:
      base = "list<float>";
      break;
    case ValueKind::StringList:
      base = "list<string>";
      break;
    case ValueKind::Enum: {
      std::string out = "enum:";
      for (size_t i = 0; i < choices.size(); ++i)
        out += (i ? " | " : " ") + (choices[i].empty() ? std::string("\"\"") : choices[i]);
      return out;
    }
  }
  std::string r = range.describe();
  return r.empty() ? base : base + " " + r;
}

const ConfigKey* find_config_key(std::string_view path) {
  for (const ConfigKey& k : config_schema())
    if (k.path == path) return &k;
  return nullptr;
}

std::string nearest_config_key(std::string_view path) {
  std::string best;
  size_t best_d = SIZE_MAX;
  auto consider = [&](const std::string& cand) {
    size_t d = edit_distance(path, cand);
    // A bare leaf name ("lr") should find its full path ("optimizer.lr").
    auto dot = cand.rfind('.');
    if (dot != std::string::npos && path.find('.') == std::string_view::npos)
      d = std::min(d, edit_distance(path, std::string_view(cand).substr(dot + 1)) + 1);
    if (d < best_d) best_d = d, best = cand;
  };
  for (const ConfigKey& k : config_schema()) consider(k.path);
  for (const ConfigSection& s : config_sections())
    if (!s.name.empty()) consider(s.name);
  return best;
}

std::string format_config_value(const ConfigKey& key, const TrainConfig& cfg) {
  FieldRef ref = key.field(const_cast<TrainConfig&>(cfg));  // read only
  struct Visitor {
    const ConfigKey& key;
    std::string operator()(int64_t* v) const {
      return key.kind == ValueKind::Bytes ? format_byte_size(*v) : std::to_string(*v);
    }
    std::string operator()(double* v) const { return format_double(*v); }
    std::string operator()(bool* v) const { return *v ? "true" : "false"; }
    std::string operator()(std::string* v) const { return quote(*v); }
    std::string operator()(std::vector<int64_t>* v) const {
      return flow_list(*v, [](int64_t x) { return std::to_string(x); });
    }
    std::string operator()(std::vector<double>* v) const { return flow_list(*v, format_double); }
    std::string operator()(std::vector<std::string>* v) const { return flow_list(*v, quote); }
  };
  return std::visit(Visitor{key}, ref);
}

namespace {
struct Unit {
  const char* suffix;
  double factor;
};
const Unit kUnits[] = {
    {"TiB", 1099511627776.0},
    {"GiB", 1073741824.0},
    {"MiB", 1048576.0},
    {"KiB", 1024.0},
    {"TB", 1e12},
    {"GB", 1e9},
    {"MB", 1e6},
    {"KB", 1e3},
    {"T", 1099511627776.0},
    {"G", 1073741824.0},
    {"M", 1048576.0},
    {"K", 1024.0},
    {"B", 1.0},
};
}  // namespace

int64_t parse_byte_size(const std::string& text) {
  std::string s = text;
  s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
  double factor = 1.0;
  for (const Unit& u : kUnits) {
    std::string suf = u.suffix;
    if (s.size() > suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0) {
      factor = u.factor;
      s.resize(s.size() - suf.size());
      break;
    }
  }
  double number = 0;
  auto res = std::from_chars(s.data(), s.data() + s.size(), number);
  if (s.empty() || res.ec != std::errc() || res.ptr != s.data() + s.size() || !(number >= 0) ||
      !std::isfinite(number * factor) || number * factor > 9.2e18)
    throw ConfigError("not a byte size: '" + text + "' (expected e.g. 1073741824, 1GiB, 512MiB, 2GB)");
  return static_cast<int64_t>(std::llround(number * factor));
}

std::string format_byte_size(int64_t bytes) {
  static const Unit binary[] = {
      {"TiB", 1099511627776.0}, {"GiB", 1073741824.0}, {"MiB", 1048576.0}, {"KiB", 1024.0}};
  if (bytes > 0)
    for (const Unit& u : binary) {
      auto f = static_cast<int64_t>(u.factor);
      if (bytes % f == 0) return std::to_string(bytes / f) + u.suffix;
    }
  return std::to_string(bytes);
}

}  // namespace strata
