// Dropout on f32: one pass that draws u = uniform01(seed, i) per element (the
// counter-based RNG shared with every backend, so the mask is a pure function of
// (seed, index) whatever the thread split), writes the scale mask (0 or 1/(1-p))
// and y = x * mask. Backward is one pass g * mask. Eval or p = 0 copies x and
// writes a mask of ones.
#include "kernels/backends.h"
#include "kernels/cpu/common.h"
#include "kernels/scalar_math.h"

namespace strata::cpu {

void dropout_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  const float* x = F(in[0]);
  float *y = F(out[0]), *mask = F(out[1]);
  bool active = a.training && a.p > 0;
  float keep_scale = a.p < 1 ? static_cast<float>(1 / (1 - a.p)) : 0.0f;
  parallel_for(in[0].numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      // compare in double exactly as the reference does, so both drop the same elements
      float m = !active                                                                        ? 1.0f
                : static_cast<double>(math::uniform01(a.seed, static_cast<uint64_t>(i))) < a.p ? 0.0f
                                                                                               : keep_scale;
      mask[i] = m;
      y[i] = x[i] * m;
    }
  });
}

void dropout_backward(const OpAttrs&, const TensorView*, const TensorView* out, const TensorView& g,
                      TensorView* gin) {
  if (!gin[0].defined()) return;
  const float *go = F(g), *mask = F(out[1]);
  float* dx = F(gin[0]);
  parallel_for(g.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dx[i] = go[i] * mask[i];
  });
}

}  // namespace strata::cpu
