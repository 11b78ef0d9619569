#include "nn/modules/attention.h"

#include "base/error.h"
#include "core/ops.h"
#include "core/precision.h"

namespace strata {

CausalSelfAttention::CausalSelfAttention(int64_t width, int64_t heads, double dropout, Generator* gen)
    : width_(width), heads_(heads) {
  if (width <= 0 || heads <= 0 || width % heads != 0)
    throw ShapeError("CausalSelfAttention(width " + std::to_string(width) + ", heads " +
                     std::to_string(heads) + "): width must be a positive multiple of heads");
  c_attn_ = register_module("c_attn", std::make_shared<Linear>(width, 3 * width, true, gen));
  c_proj_ = register_module("c_proj", std::make_shared<Linear>(width, width, true, gen));
  if (dropout > 0) drop_ = register_module("drop", std::make_shared<Dropout>(dropout, gen));
}

Tensor CausalSelfAttention::forward(const Tensor& x) {
  if (x.dim() != 3 || x.size(2) != width_)
    throw ShapeError("CausalSelfAttention(width " + std::to_string(width_) + "): input " + x.str() +
                     " must be [B, T, " + std::to_string(width_) + "]");
  const int64_t B = x.size(0), T = x.size(1), H = heads_, D = width_ / heads_, C = width_;
  // q, k and v each from its own third of c_attn: [B, T, C] viewed as [B, T, H, D],
  // which attention reads in place (bthd), so no head is permuted into [B, H, T, D] and
  // back on either pass. One [B, T, 3C] product split afterwards costs more on the
  // CPU than the three products: its slices are copies, and their backward
  // zero-fills three [B, T, 3C] gradients and adds them up, where a third's
  // backward adds [B, T, C] ones.
  const DType cd = compute_dtype();
  const Tensor xc = cast(x, cd), w = c_attn_->weight(), b = c_attn_->bias();
  auto part = [&](int64_t i) {
    Tensor wi = cast(slice(w, 0, i * C, (i + 1) * C), cd), bi = cast(slice(b, 0, i * C, (i + 1) * C), cd);
    return reshape(linear(xc, wi, bi), {B, T, H, D});
  };
  Tensor y = attention(part(0), part(1), part(2), 0.0, true);  // [B, T, H, D], scale 1/sqrt(D)
  y = reshape(y, {B, T, width_});                              // [B, T, C]
  y = (*c_proj_)(y);
  return drop_ ? (*drop_)(y) : y;
}

}  // namespace strata
