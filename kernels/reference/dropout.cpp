// Reference dropout. The keep decision uses the shared counter-based RNG
// (math::uniform01) -- the one place a reference kernel uses scalar_math.h -- so
// that every backend drops the same elements for the same (seed, index).
#include "kernels/backends.h"
#include "kernels/reference/common.h"
#include "kernels/scalar_math.h"

namespace strata::reference {

void dropout_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  bool active = a.training && a.p > 0;
  double keep_scale = a.p < 1 ? 1 / (1 - a.p) : 0.0;
  for (int64_t i = 0; i < in[0].numel(); ++i) {
    double mask = 1;
    if (active)
      mask = static_cast<double>(math::uniform01(a.seed, static_cast<uint64_t>(i))) < a.p ? 0.0 : keep_scale;
    D(out[1])[i] = mask;
    D(out[0])[i] = D(in[0])[i] * mask;
  }
}

void dropout_backward(const OpAttrs&, const TensorView*, const TensorView* out, const TensorView& g,
                      TensorView* gin) {
  if (!gin[0].defined()) return;
  for (int64_t i = 0; i < g.numel(); ++i) D(gin[0])[i] = D(g)[i] * D(out[1])[i];
}

}  // namespace strata::reference
