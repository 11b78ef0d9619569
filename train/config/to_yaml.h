// The resolved config as YAML: every key of the schema, defaults filled in, one
// section per mapping, each key followed by its doc line as a comment. It parses
// back (parse_config) to an equal TrainConfig; the trainer writes it as
// resolved.yaml into the run directory and into each checkpoint.
#pragma once
#include <string>

#include "train/config/train_config.h"

namespace strata {

std::string to_yaml(const TrainConfig& cfg);

}  // namespace strata
