// The CUDA side of attention's [B,T,H,D] layout (OpAttrs::bthd). The CPU kernel reads
// such heads in place through its GEMMs' leading dimensions; the CUDA kernels
// (attention_{forward,backward}_kernel.cuh) index one head's rows as a
// contiguous block, so here a [B,T,H,D] operand is permuted into a [B,H,T,D]
// scratch copy on the context's stream, and a result computed there is
// permuted back: one read and one write per element, what the model's own
// permutes cost before the layout existed.
#pragma once
#include "kernels/backends.h"
#include "kernels/cuda/context.h"

namespace strata::cuda::attn_launch {

class HeadMajor {
 public:
  // A [B,H,T,D] scratch for the [B,T,H,D] view `bthd` (undefined stays
  // undefined); with copy_in its data is bthd's, permuted.
  HeadMajor(const TensorView& bthd, bool copy_in) : scratch_(bthd.defined() ? bthd.bytes() : 0) {
    if (!bthd.defined()) return;
    const Shape& s = bthd.shape;
    view_ = TensorView{scratch_.data(), bthd.dtype, {s[0], s[2], s[1], s[3]}, bthd.device};
    if (copy_in) permute_forward(swap(), &bthd, &view_);
  }
  const TensorView& view() const { return view_; }
  // bthd = this [B,H,T,D] result, permuted back
  void copy_out(TensorView& bthd) const {
    if (bthd.defined()) permute_forward(swap(), &view_, &bthd);
  }

 private:
  static OpAttrs swap() {  // axes 1 and 2 trade places, both ways
    OpAttrs a;
    a.axes = {0, 2, 1, 3};
    return a;
  }
  Scratch scratch_;
  TensorView view_;
};

}  // namespace strata::cuda::attn_launch
