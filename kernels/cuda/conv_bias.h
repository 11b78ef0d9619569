// conv2d's bias on CUDA: the part of the op that is strata's own kernels rather
// than cuDNN's (conv.cu runs the convolution without it). Forward adds b[o] to
// every pixel of channel o of y; backward sums dy per channel into db. Kept
// apart from conv.cu, which only the CUDA build compiles, so that the host SIMT
// emulator (tests/simt) runs these kernels beside its stand-in convolution.
#pragma once
#include "kernels/runtime/tensor_view.h"

namespace strata::cuda::conv_bias {

// y[n, o, :, :] += bias[o] for y [N, O, Ho, Wo] (f32/f16/bf16), each element
// rounded once to y's dtype; bias [O] f32, f16 or bf16 (else Error naming it).
// Launches on context().stream; an empty y does nothing.
void add(const TensorView& bias, const TensorView& y);

// db[o] = the sum over n and the Ho Wo pixels of dy[n, o, :, :] (dy [N, O, Ho, Wo],
// f32/f16/bf16; db [O] f32, f16 or bf16), in FP32 and in a fixed order
// (channel_reduce.cuh): zeros when dy is empty. Launches on context().stream.
void grad(const TensorView& dy, const TensorView& db);

}  // namespace strata::cuda::conv_bias
