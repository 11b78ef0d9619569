// Buffers and runners for walking the op table in tests: random inputs from an
// OpCase, the reference backend in f64, the CPU dispatch in f32/f16/bf16 storage,
// sentinel guards after every output, and a central finite-difference checker.
#pragma once
#include <cstddef>
#include <vector>

#include "kernels/backends.h"
#include "op_cases.h"

namespace strata::testing {

// An owning buffer with kGuard sentinel elements' worth of bytes after the data.
struct Buffer {
  static constexpr size_t kGuardBytes = 64;
  std::vector<std::byte> bytes;
  TensorView view;

  Buffer() = default;
  Buffer(DType dt, Shape shape);
  void fill_sentinel();
  bool sentinel_intact() const;
  std::vector<double> to_double() const;
  void from_double(const std::vector<double>& v);
};

struct OpInputs {
  std::vector<Buffer> buffers;  // in case order
};

// Random inputs for case `c` in floating dtype `dt` (integer inputs stay i64).
OpInputs make_inputs(Op op, const OpCase& c, DType dt, uint64_t seed);
// Copies (any dtype) converted to `dt` for floating inputs.
OpInputs convert_inputs(const OpInputs& src, DType dt);

struct OpRun {
  std::vector<Buffer> outputs;
  std::vector<Buffer> grad_inputs;  // empty Buffer (undefined view) when not differentiable
};

// Runs forward (and backward with `grad_out` in output-0 shape, when given) on
// the reference backend (dtype f64) or through cpu dispatch (dtype of the inputs).
OpRun run_reference(Op op, const OpAttrs& a, const OpInputs& in, const std::vector<double>* grad_out);
OpRun run_cpu(Op op, const OpAttrs& a, const OpInputs& in, DType dt, const std::vector<double>* grad_out);

// max |x - y| / max(1, max |y|)
double scaled_error(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace strata::testing
