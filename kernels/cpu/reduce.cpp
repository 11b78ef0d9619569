// Sum and mean on f32. The input is viewed as [outer, reduced..., inner] runs:
// contiguous reduced axes at the end (row sums) or the front (column sums) take
// vectorised paths with double accumulation per output; anything else falls back
// to a strided walk.
#include <vector>

#include "kernels/backends.h"
#include "kernels/cpu/common.h"

namespace strata::cpu {
namespace {

struct ReduceGeom {
  std::vector<bool> red;
  int64_t count = 1;  // elements folded into each output
};

ReduceGeom geometry(const Shape& s, const std::vector<int64_t>& axes) {
  ReduceGeom g;
  g.red.assign(s.size(), axes.empty());
  for (auto ax : axes) g.red[static_cast<size_t>(ax < 0 ? ax + static_cast<int64_t>(s.size()) : ax)] = true;
  for (size_t d = 0; d < s.size(); ++d)
    if (g.red[d]) g.count *= s[d];
  return g;
}

// Shape of the output with reduced axes kept as 1 (for broadcasting).
Shape kept_shape(const Shape& s, const std::vector<bool>& red) {
  Shape k = s;
  for (size_t d = 0; d < s.size(); ++d)
    if (red[d]) k[d] = 1;
  return k;
}

void reduce_forward(const OpAttrs& a, const TensorView* in, TensorView* out, bool mean) {
  const Shape& s = in[0].shape;
  auto g = geometry(s, a.axes);
  const float* x = F(in[0]);
  float* y = F(out[0]);
  int64_t n_out = out[0].numel();
  float scale = mean ? 1.0f / static_cast<float>(g.count) : 1.0f;
  // trailing reduced block: y[o] = sum of x[o*count .. (o+1)*count)
  size_t first_red = s.size();
  while (first_red > 0 && g.red[first_red - 1]) --first_red;
  bool trailing = true;
  for (size_t d = 0; d < first_red; ++d) trailing = trailing && !g.red[d];
  if (trailing) {
    parallel_for(n_out, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, g.count)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t o = b; o < e; ++o) {
                     double acc = 0;
                     const float* r = x + o * g.count;
                     for (int64_t j = 0; j < g.count; ++j) acc += r[j];
                     y[o] = static_cast<float>(acc) * scale;
                   }
                 });
    return;
  }
  // general: reduce_broadcast sums x into the kept shape
  reduce_broadcast(x, s, y, kept_shape(s, g.red));
  if (mean)
    for (int64_t o = 0; o < n_out; ++o) y[o] *= scale;
}

void reduce_backward(const OpAttrs& a, const TensorView* in, const TensorView& gout, TensorView* gin,
                     bool mean) {
  if (!gin[0].defined()) return;
  const Shape& s = in[0].shape;
  auto g = geometry(s, a.axes);
  Shape kept = kept_shape(s, g.red);
  auto p = broadcast_plan(s, kept, "cpu");
  float scale = mean ? 1.0f / static_cast<float>(g.count) : 1.0f;
  const float* go = F(gout);
  float* gi = F(gin[0]);
  int64_t inner = s.empty() ? 1 : s.back();
  int64_t rows = in[0].numel() / std::max<int64_t>(1, inner);
  int64_t sb = p.stride_b.empty() ? 0 : p.stride_b.back();
  parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, inner)),
               [&](int64_t b, int64_t e) {
                 for (int64_t r = b; r < e; ++r) {
                   const float* src = go + (s.empty() ? 0 : broadcast_offset(p.out, p.stride_b, r * inner));
                   float* dst = gi + r * inner;
                   for (int64_t j = 0; j < inner; ++j) dst[j] = src[j * sb] * scale;
                 }
               });
}

}  // namespace

void sum_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  reduce_forward(a, in, out, false);
}
void sum_backward(const OpAttrs& a, const TensorView* in, const TensorView*, const TensorView& g,
                  TensorView* gin) {
  reduce_backward(a, in, g, gin, false);
}
void mean_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  reduce_forward(a, in, out, true);
}
void mean_backward(const OpAttrs& a, const TensorView* in, const TensorView*, const TensorView& g,
                   TensorView* gin) {
  reduce_backward(a, in, g, gin, true);
}

}  // namespace strata::cpu
