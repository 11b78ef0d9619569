// Reading a TrainConfig: a YAML file, then `a.b.c=value` command-line overrides
// (values are YAML scalars or flow lists: model.hidden=[512,256]). Every key is
// checked against the schema; a bad one throws strata::ConfigError naming the key
// path, where it came from (file:line, or "command line override 'k=v'"), what
// was expected and what was given, and for an unknown key the nearest valid one.
#pragma once
#include <string>
#include <vector>

#include "train/config/train_config.h"

namespace strata {

// Defaults, then the file at `path`, then each override in order; then validated.
TrainConfig load_config(const std::string& path, const std::vector<std::string>& overrides = {});

// The same from YAML text; `source_name` stands for the file name in messages.
TrainConfig parse_config(const std::string& yaml_text, const std::string& source_name = "<string>",
                         const std::vector<std::string>& overrides = {});

// Applies one "a.b.c=value" override to `cfg` (not followed by validate_config).
void apply_config_override(TrainConfig& cfg, const std::string& assignment);

// Checks between keys (e.g. normalize_mean and normalize_std of equal length);
// each key's own type and range is checked when it is read.
void validate_config(const TrainConfig& cfg);

}  // namespace strata
