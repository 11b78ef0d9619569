// The config parser: walks the YAML tree against the schema and converts each
// leaf with the rules of its ValueKind. Errors carry the key path and the yaml-cpp
// Mark of the offending node (lines are 1-based in messages).
#include "train/config/load.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "base/error.h"
#include "train/config/schema.h"
#include "train/config/secret_values.h"

namespace strata {
namespace {

// Where a value came from, for messages: "configs/x.yaml:12" or an override.
struct Origin {
  std::string source;  // file name, or "command line override 'k=v'"
  bool is_override = false;
  std::string at(const YAML::Mark& m) const {
    if (is_override || m.is_null()) return source;
    return source + ":" + std::to_string(m.line + 1);
  }
};

std::string show(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "null";
  if (n.IsScalar()) return "'" + shown_value(n.Scalar()) + "'";
  YAML::Emitter e;
  e << YAML::Flow << n;
  return std::string(n.IsSequence() ? "a list " : "a mapping ") + e.c_str();
}

[[noreturn]] void fail_type(const std::string& path, const std::string& where, const std::string& expected,
                            const YAML::Node& got) {
  throw ConfigError("config key '" + path + "' at " + where + ": expected " + expected + ", got " +
                    show(got));
}

template <class T>
T scalar_as(const ConfigKey& key, const std::string& path, const YAML::Node& n, const std::string& where) {
  if (!n.IsScalar()) fail_type(path, where, key.type_name(), n);
  try {
    return n.as<T>();
  } catch (const YAML::BadConversion&) {
    fail_type(path, where, key.type_name(), n);
  }
}

void check_range(const ConfigKey& key, const std::string& path, double v, const std::string& where,
                 const YAML::Node& n) {
  if (!key.range.contains(v))
    throw ConfigError("config key '" + path + "' at " + where + ": value " + n.Scalar() +
                      " is out of range, expected " + key.type_name());
}

int64_t read_int(const ConfigKey& key, const std::string& path, const YAML::Node& n,
                 const std::string& where) {
  auto v = scalar_as<int64_t>(key, path, n, where);
  check_range(key, path, static_cast<double>(v), where, n);
  return v;
}

double read_float(const ConfigKey& key, const std::string& path, const YAML::Node& n,
                  const std::string& where) {
  auto v = scalar_as<double>(key, path, n, where);
  if (!std::isfinite(v)) fail_type(path, where, key.type_name() + " (finite)", n);
  check_range(key, path, v, where, n);
  return v;
}

std::string read_string(const ConfigKey& key, const std::string& path, const YAML::Node& n,
                        const std::string& where) {
  if (n.IsNull()) return "";
  return scalar_as<std::string>(key, path, n, where);
}

template <class T, class F>
std::vector<T> read_list(const ConfigKey& key, const YAML::Node& n, const std::string& where, F read_one) {
  if (!n.IsSequence()) fail_type(key.path, where, key.type_name(), n);
  std::vector<T> out;
  for (size_t i = 0; i < n.size(); ++i) {
    const YAML::Node& e = n[i];
    out.push_back(read_one(key, key.path + "[" + std::to_string(i) + "]", e, where));
  }
  return out;
}

void assign(const ConfigKey& key, TrainConfig& cfg, const YAML::Node& n, const Origin& origin,
            const YAML::Mark& mark) {
  const std::string where = origin.at(n.Mark().is_null() ? mark : n.Mark());
  const std::string& p = key.path;
  FieldRef ref = key.field(cfg);
  switch (key.kind) {
    case ValueKind::Int:
      *std::get<int64_t*>(ref) = read_int(key, p, n, where);
      break;
    case ValueKind::Float:
      *std::get<double*>(ref) = read_float(key, p, n, where);
      break;
    case ValueKind::Bool:
      *std::get<bool*>(ref) = scalar_as<bool>(key, p, n, where);
      break;
    case ValueKind::String:
      *std::get<std::string*>(ref) = read_string(key, p, n, where);
      break;
    case ValueKind::Enum: {
      std::string v = read_string(key, p, n, where);
      if (std::find(key.choices.begin(), key.choices.end(), v) == key.choices.end())
        fail_type(p, where, key.type_name(), n);
      *std::get<std::string*>(ref) = v;
      break;
    }
    case ValueKind::Bytes: {
      if (!n.IsScalar()) fail_type(p, where, "bytes (an integer or a size such as 1GiB)", n);
      int64_t v = 0;
      try {
        v = parse_byte_size(n.Scalar());
      } catch (const ConfigError& e) {
        throw ConfigError("config key '" + p + "' at " + where + ": " + e.what());
      }
      check_range(key, p, static_cast<double>(v), where, n);
      *std::get<int64_t*>(ref) = v;
      break;
    }
    case ValueKind::IntList:
      *std::get<std::vector<int64_t>*>(ref) = read_list<int64_t>(key, n, where, read_int);
      break;
    case ValueKind::FloatList:
      *std::get<std::vector<double>*>(ref) = read_list<double>(key, n, where, read_float);
      break;
    case ValueKind::StringList:
      *std::get<std::vector<std::string>*>(ref) = read_list<std::string>(key, n, where, read_string);
      break;
  }
}

// A section ("data") or a sub-section of one ("data.s3", whose keys are data.s3.*).
bool is_section(const std::string& name) {
  for (const ConfigSection& s : config_sections())
    if (!s.name.empty() && s.name == name) return true;
  for (const ConfigKey& k : config_schema())
    if (k.path.size() > name.size() && k.path.compare(0, name.size() + 1, name + ".") == 0) return true;
  return false;
}

[[noreturn]] void fail_unknown(const std::string& path, const std::string& where) {
  throw ConfigError("unknown config key '" + path + "' at " + where + "; did you mean '" +
                    nearest_config_key(path) + "'?");
}

void walk(const YAML::Node& map, const std::string& prefix, TrainConfig& cfg, const Origin& origin) {
  // YAML forbids a key twice in one mapping; yaml-cpp keeps both, and the last
  // would silently win.
  std::map<std::string, YAML::Mark> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string name = it->first.Scalar();
    const std::string path = prefix.empty() ? name : prefix + "." + name;
    const YAML::Mark mark = it->first.Mark();
    if (auto [first, fresh] = seen.emplace(name, mark); !fresh)
      throw ConfigError("config key '" + path + "' appears twice, at " + origin.at(first->second) +
                        " and at " + origin.at(mark) + "; keep one");
    if (const ConfigKey* key = find_config_key(path)) {
      assign(*key, cfg, it->second, origin, mark);
    } else if (is_section(path)) {
      if (it->second.IsNull()) continue;  // "early_stopping:" with nothing under it
      if (!it->second.IsMap())
        fail_type(path, origin.at(mark), "a mapping of " + path + ".* keys", it->second);
      walk(it->second, path, cfg, origin);
    } else {
      fail_unknown(path, origin.at(mark));
    }
  }
}

TrainConfig parse_node(const YAML::Node& root, const Origin& origin,
                       const std::vector<std::string>& overrides) {
  TrainConfig cfg;
  if (root.IsDefined() && !root.IsNull()) {
    if (!root.IsMap())
      throw ConfigError("config " + origin.source + ": expected a mapping of sections at the top level");
    walk(root, "", cfg, origin);
  }
  for (const std::string& o : overrides) apply_config_override(cfg, o);
  try {
    validate_config(cfg);
  } catch (const ConfigError& e) {
    throw ConfigError(std::string(e.what()) + " (in " + origin.source +
                      (overrides.empty() ? "" : " with overrides") + ")");
  }
  return cfg;
}

YAML::Node load_yaml(const std::string& text, const std::string& source) {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw ConfigError("config " + source + ":" + std::to_string(e.mark.line + 1) +
                      ": YAML syntax error: " + e.msg);
  }
}

// A key pasted into any string value would be copied into resolved.yaml, the
// log and every checkpoint; the message names the key path, never the value.
void refuse_embedded_keys(const TrainConfig& cfg) {
  TrainConfig copy = cfg;  // ConfigKey::field binds a mutable config
  for (const ConfigKey& key : config_schema()) {
    FieldRef ref = key.field(copy);
    std::vector<std::string> values;
    if (auto* s = std::get_if<std::string*>(&ref)) values.push_back(**s);
    if (auto* l = std::get_if<std::vector<std::string>*>(&ref)) values = **l;
    for (const std::string& v : values)
      if (looks_like_key(v))
        throw ConfigError("config key '" + key.path +
                          "' holds what looks like a key itself (64 hex digits or base64 of 32 bytes), not "
                          "shown: a config is copied into resolved.yaml, train.log and every checkpoint. Put "
                          "the key in a file and give its path in data.encryption_key_file, or set "
                          "STRATA_DATA_KEY_FILE or STRATA_DATA_KEY");
  }
}

}  // namespace

TrainConfig parse_config(const std::string& yaml_text, const std::string& source_name,
                         const std::vector<std::string>& overrides) {
  return parse_node(load_yaml(yaml_text, source_name), Origin{source_name}, overrides);
}

TrainConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ConfigError("config file '" + path + "' is a directory; give the YAML file in it");
  std::ifstream in(path);
  if (!in) throw ConfigError("cannot read config file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_config(ss.str(), path, overrides);
}

void apply_config_override(TrainConfig& cfg, const std::string& assignment) {
  auto eq = assignment.find('=');
  // messages name the override, but never repeat a key pasted into it
  Origin origin{
      "command line override '" +
          (eq == std::string::npos ? shown_value(assignment)
                                   : assignment.substr(0, eq + 1) + shown_value(assignment.substr(eq + 1))) +
          "'",
      true};
  if (eq == std::string::npos || eq == 0)
    throw ConfigError(origin.source + ": expected key=value, e.g. optimizer.lr=0.01");
  const std::string path = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  const ConfigKey* key = find_config_key(path);
  if (!key && is_section(path)) {
    std::string example;
    for (const ConfigKey& k : config_schema())
      if (example.empty() && k.section() == path) example = k.path;
    throw ConfigError("config section '" + path + "' at " + origin.source +
                      ": override its keys one at a time, e.g. " + example + "=...");
  }
  if (!key) fail_unknown(path, origin.source);
  YAML::Node value;
  try {
    value = YAML::Load(text);
  } catch (const YAML::ParserException&) {
    if (key->kind != ValueKind::String) fail_type(path, origin.source, key->type_name(), YAML::Node(text));
    value = YAML::Node(text);  // a string need not be valid YAML: data.train_url=s3://b/{x}
  }
  if (key->kind == ValueKind::String && !value.IsScalar() && !value.IsNull()) value = YAML::Node(text);
  assign(*key, cfg, value, origin, YAML::Mark::null_mark());
}

void validate_config(const TrainConfig& cfg) {
  refuse_embedded_keys(cfg);
  const auto& d = cfg.data;
  if (d.normalize_mean.size() != d.normalize_std.size())
    throw ConfigError(
        "config keys 'data.normalize_mean' and 'data.normalize_std' must have the same length, got " +
        std::to_string(d.normalize_mean.size()) + " and " + std::to_string(d.normalize_std.size()));
  auto pair = [](const std::vector<double>& v, const char* key) {
    if (v.size() != 2 || v[0] > v[1])
      throw ConfigError(std::string("config key '") + key + "' must be [low, high] with low <= high");
  };
  pair(d.augment_crop_scale, "data.augment_crop_scale");
  pair(d.augment_crop_ratio, "data.augment_crop_ratio");
  if (d.augment_color_jitter.size() != 3)
    throw ConfigError("config key 'data.augment_color_jitter' must be [brightness, contrast, saturation]");
  if (d.image_channels == 2) throw ConfigError("config key 'data.image_channels' must be 1 or 3, got 2");
}

}  // namespace strata
