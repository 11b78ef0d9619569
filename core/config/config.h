// The configuration system of strata-train in one include: TrainConfig, its
// schema, the parser, the resolved.yaml writer and the docs generator.
#pragma once
#include "base/error.h"  // ConfigError
#include "core/config/docs.h"
#include "core/config/load.h"
#include "core/config/schema.h"
#include "core/config/to_yaml.h"
#include "core/config/train_config.h"
