// Every built-in module, for users who want them all.
#pragma once
#include "core/module.h"
#include "core/modules/activation.h"
#include "core/modules/attention.h"
#include "core/modules/conv.h"
#include "core/modules/dropout.h"
#include "core/modules/embedding.h"
#include "core/modules/linear.h"
#include "core/modules/norm.h"
#include "core/modules/sequential.h"
