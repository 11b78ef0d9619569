// Parameter groups: subsets of a model's named parameters that share optimizer
// hyperparameters. The usual split for transformers (GPT-2, nanoGPT) applies
// weight decay only to weight matrices, never to biases, normalisation
// parameters or embeddings.
#pragma once
#include <vector>

#include "core/module.h"

namespace strata {

struct ParamGroup {
  NamedTensors params;
  double weight_decay = 0.0;
};

// {decay group (weight_decay), no-decay group (0)}, each in named_parameters()
// order. No decay: every parameter named "bias", and every parameter of an
// Embedding, LayerNorm or BatchNorm2d module anywhere in the tree.
std::vector<ParamGroup> weight_decay_groups(const Module& model, double weight_decay);

}  // namespace strata
