// The configuration system of strata-train in one include: TrainConfig, its
// schema, the parser, the resolved.yaml writer and the docs generator.
#pragma once
#include "base/error.h"  // ConfigError
#include "train/config/docs.h"
#include "train/config/load.h"
#include "train/config/schema.h"
#include "train/config/to_yaml.h"
#include "train/config/train_config.h"
