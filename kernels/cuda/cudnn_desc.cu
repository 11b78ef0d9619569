// cuDNN descriptor owners (see cudnn_desc.h).
#include <climits>
#include <string>

#include "base/error.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/cudnn_desc.h"

namespace strata::cuda {
namespace {

int to_int(int64_t v, const char* op, const char* what) {
  if (v < 0 || v > INT_MAX)
    throw Error(std::string(op) + ": " + what + " " + std::to_string(v) + " is outside cuDNN's int range");
  return static_cast<int>(v);
}

}  // namespace

cudnnDataType_t cudnn_data_type(DType dt, const char* op) {
  switch (dt) {
    case DType::f32:
      return CUDNN_DATA_FLOAT;
    case DType::f16:
      return CUDNN_DATA_HALF;
    case DType::bf16:
      return CUDNN_DATA_BFLOAT16;
    default:
      throw Error(std::string(op) + ": cuDNN takes f32, f16 or bf16, got " + dtype_name(dt));
  }
}

TensorDesc::TensorDesc() { STRATA_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d_)); }
TensorDesc::~TensorDesc() { cudnnDestroyTensorDescriptor(d_); }

void TensorDesc::set_nchw(DType dt, int64_t n, int64_t c, int64_t h, int64_t w, const char* op) {
  to_int(n * c * h * w, op, "tensor size");
  STRATA_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d_, CUDNN_TENSOR_NCHW, cudnn_data_type(dt, op),
                                                to_int(n, op, "N"), to_int(c, op, "C"), to_int(h, op, "H"),
                                                to_int(w, op, "W")));
}

FilterDesc::FilterDesc() { STRATA_CUDNN_CHECK(cudnnCreateFilterDescriptor(&d_)); }
FilterDesc::~FilterDesc() { cudnnDestroyFilterDescriptor(d_); }

void FilterDesc::set(DType dt, int64_t o, int64_t c, int64_t kh, int64_t kw, const char* op) {
  to_int(o * c * kh * kw, op, "filter size");
  STRATA_CUDNN_CHECK(cudnnSetFilter4dDescriptor(d_, cudnn_data_type(dt, op), CUDNN_TENSOR_NCHW,
                                                to_int(o, op, "O"), to_int(c, op, "C"), to_int(kh, op, "kh"),
                                                to_int(kw, op, "kw")));
}

ConvDesc::ConvDesc() { STRATA_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&d_)); }
ConvDesc::~ConvDesc() { cudnnDestroyConvolutionDescriptor(d_); }

void ConvDesc::set_2d(int64_t pad_h, int64_t pad_w, int64_t stride_h, int64_t stride_w,
                      cudnnDataType_t compute, const char* op) {
  STRATA_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
      d_, to_int(pad_h, op, "pad_h"), to_int(pad_w, op, "pad_w"), to_int(stride_h, op, "stride_h"),
      to_int(stride_w, op, "stride_w"), 1, 1, CUDNN_CROSS_CORRELATION, compute));
}

void ConvDesc::set_math(cudnnMathType_t math) { STRATA_CUDNN_CHECK(cudnnSetConvolutionMathType(d_, math)); }

}  // namespace strata::cuda
