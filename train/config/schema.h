// The configuration schema: one row per key of TrainConfig (dotted path, kind,
// allowed values or range, doc line, and the field it is bound to). It is the
// single source of truth that the parser (load.cpp), the resolved.yaml writer
// (to_yaml.cpp) and the docs generator (docs.cpp) read; defaults are read from a
// default-constructed TrainConfig. No YAML types appear here.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "train/config/train_config.h"

namespace strata {

enum class ValueKind { Int, Float, Bool, String, Enum, Bytes, IntList, FloatList, StringList };

// Inclusive or open bounds for a number (for a list: for each element).
struct Range {
  std::optional<double> lo, hi;
  bool lo_open = false, hi_open = false;
  bool contains(double v) const;
  std::string describe() const;  // ">= 1", "> 0", "[0, 1)"
};

// A pointer to the bound field of one TrainConfig object.
using FieldRef = std::variant<int64_t*, double*, bool*, std::string*, std::vector<int64_t>*,
                              std::vector<double>*, std::vector<std::string>*>;

struct ConfigKey {
  std::string path;  // "optimizer.lr"
  ValueKind kind;
  std::vector<std::string> choices;  // allowed values of an Enum
  Range range;                       // numbers, bytes and list elements
  std::string doc;                   // one line
  std::function<FieldRef(TrainConfig&)> field;

  std::string section() const;    // "optimizer"; "" for top-level keys
  std::string type_name() const;  // "float > 0", "enum: sgd | adamw", "list<int> >= 1"
};

struct ConfigSection {
  std::string name;  // "" for the top-level keys
  std::string doc;
};

// Every key, in the order the writer and the docs list them.
const std::vector<ConfigKey>& config_schema();
// The sections in order, with a doc line each.
const std::vector<ConfigSection>& config_sections();
// The key with this dotted path, or nullptr.
const ConfigKey* find_config_key(std::string_view path);
// The valid key path (or section name) closest to `path` by edit distance.
std::string nearest_config_key(std::string_view path);

// The key's value in `cfg` as YAML flow text: 0.001, "off", [256, 128], 4GiB.
std::string format_config_value(const ConfigKey& key, const TrainConfig& cfg);
// "1GiB", "512MiB", "1.5GB", "4096" -> bytes (KiB/MiB/GiB/TiB and K/M/G/T are
// powers of 1024, KB/MB/GB/TB powers of 1000). Throws ConfigError on bad input.
int64_t parse_byte_size(const std::string& text);
// The shortest exact text for a byte count: 4GiB, 1536KiB, 1000.
std::string format_byte_size(int64_t bytes);

}  // namespace strata
