// What changed between two configs, key by key, in the schema's order. Used to
// explain a checkpoint that does not fit: "model.hidden: [256, 128] in the
// checkpoint, [64] now" says which key to put back.
#pragma once
#include <string>
#include <vector>

#include "train/config/train_config.h"

namespace strata {

// "<key>: <value before> -> <value now>" for every key whose value differs,
// leaving out the keys of the sections in `ignore_sections`.
std::vector<std::string> config_differences(const TrainConfig& before, const TrainConfig& now,
                                            const std::vector<std::string>& ignore_sections = {});

}  // namespace strata
