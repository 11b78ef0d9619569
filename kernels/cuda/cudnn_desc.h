// Owners of cuDNN descriptors (created in the constructor, destroyed in the
// destructor), so a throw between creation and use leaks nothing. Descriptors
// are host objects: building them needs no device. Shapes are checked against
// cuDNN's int dimensions; failures throw strata::Error naming `op`.
#pragma once
#include <cudnn.h>

#include <cstdint>

#include "kernels/runtime/dtype.h"

namespace strata::cuda {

// The cuDNN data type of a storage dtype (f32, f16, bf16).
cudnnDataType_t cudnn_data_type(DType dt, const char* op);

class TensorDesc {
 public:
  TensorDesc();
  ~TensorDesc();
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  // A contiguous NCHW tensor.
  void set_nchw(DType dt, int64_t n, int64_t c, int64_t h, int64_t w, const char* op);
  cudnnTensorDescriptor_t get() const { return d_; }

 private:
  cudnnTensorDescriptor_t d_ = nullptr;
};

class FilterDesc {
 public:
  FilterDesc();
  ~FilterDesc();
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
  // A contiguous [O, C, kh, kw] filter.
  void set(DType dt, int64_t o, int64_t c, int64_t kh, int64_t kw, const char* op);
  cudnnFilterDescriptor_t get() const { return d_; }

 private:
  cudnnFilterDescriptor_t d_ = nullptr;
};

class ConvDesc {
 public:
  ConvDesc();
  ~ConvDesc();
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
  // Cross-correlation (what deep learning calls convolution), dilation 1, one group.
  void set_2d(int64_t pad_h, int64_t pad_w, int64_t stride_h, int64_t stride_w, cudnnDataType_t compute,
              const char* op);
  void set_math(cudnnMathType_t math);
  cudnnConvolutionDescriptor_t get() const { return d_; }

 private:
  cudnnConvolutionDescriptor_t d_ = nullptr;
};

}  // namespace strata::cuda
