// Embedding on f32. Forward gathers one table row per id (a memcpy of D floats;
// threads take blocks of ids). Backward scatter-adds rows of g into the table
// gradient: to avoid atomics and keep the sum order fixed, each thread owns a
// block of vocabulary rows and walks every id, adding only those in its block,
// so the ids are read once per thread and g and the table gradient once overall.
#include <cstring>
#include <string>

#include "base/error.h"
#include "kernels/backends.h"
#include "kernels/cpu/common.h"

namespace strata::cpu {
namespace {

void check_ids(const TensorView& ids, int64_t V) {
  const int64_t* p = ids.as<int64_t>();
  for (int64_t i = 0; i < ids.numel(); ++i)
    if (p[i] < 0 || p[i] >= V)
      throw Error("embedding: id " + std::to_string(p[i]) + " at position " + std::to_string(i) +
                  " is out of range for a table of " + std::to_string(V) + " rows");
}

}  // namespace

void embedding_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  int64_t V = in[1].shape[0], n = in[1].shape[1];
  check_ids(in[0], V);
  const int64_t* ids = in[0].as<int64_t>();
  const float* table = F(in[1]);
  float* y = F(out[0]);
  parallel_for(in[0].numel(), std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, n)),
               [&](int64_t b, int64_t e) {
                 for (int64_t i = b; i < e; ++i)
                   std::memcpy(y + i * n, table + ids[i] * n, sizeof(float) * static_cast<size_t>(n));
               });
}

void embedding_backward(const OpAttrs&, const TensorView* in, const TensorView*, const TensorView& g,
                        TensorView* gin) {
  if (!gin[1].defined()) return;
  int64_t V = in[1].shape[0], n = in[1].shape[1], count = in[0].numel();
  check_ids(in[0], V);
  const int64_t* ids = in[0].as<int64_t>();
  const float* go = F(g);
  float* dt = F(gin[1]);
  std::memset(dt, 0, sizeof(float) * static_cast<size_t>(V * n));
  // split the vocabulary only when there is enough to add to pay for every thread scanning the ids
  int64_t grain = count * n < kElementwiseGrain ? V : 1;
  parallel_for(V, grain, [&](int64_t vb, int64_t ve) {
    for (int64_t i = 0; i < count; ++i) {
      int64_t id = ids[i];
      if (id < vb || id >= ve) continue;
      float* dst = dt + id * n;
      const float* src = go + i * n;
      for (int64_t j = 0; j < n; ++j) dst[j] += src[j];
    }
  });
}

}  // namespace strata::cpu
