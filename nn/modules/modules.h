// Every built-in module, for users who want them all.
#pragma once
#include "core/module.h"
#include "nn/modules/activation.h"
#include "nn/modules/attention.h"
#include "nn/modules/conv.h"
#include "nn/modules/dropout.h"
#include "nn/modules/embedding.h"
#include "nn/modules/linear.h"
#include "nn/modules/norm.h"
#include "nn/modules/sequential.h"
