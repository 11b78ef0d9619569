// Buffers and runners for walking the op table in tests: random inputs from an
// OpCase, the reference backend in f64, a backend under test (cpu or cuda,
// through kernel_forward/kernel_backward) in the storage dtypes infer() gives,
// outputs and gradients pre-filled with NaN so that a kernel relying on zeroed
// memory fails, sentinel guards after every buffer, and a scaled error.
#pragma once
#include <cstddef>
#include <vector>

#include "kernels/backends.h"
#include "op_cases.h"

namespace strata::testing {

// The backend a run checks against the reference. A cuda run places every
// buffer (guard included) in device memory and copies it back afterwards. A
// cuda-sim run calls the CUDA backend's launchers compiled for the host SIMT
// emulator (tests/simt) on exact-size host copies of the buffers, whose views
// say Device::cuda, as a cuda run's do.
enum class BackendKind { cpu, cuda, cuda_sim };
const char* backend_name(BackendKind b);
// The emulated backend's op table: set by the binary that links it (tests/simt).
void set_cuda_sim_backend(const Backend& table);
// Bytes by which every later cuda-sim buffer starts past its block's start:
// 0 (16-byte aligned) or 8 (every element type still aligned, no buffer to 16 bytes).
void set_cuda_sim_shift(size_t bytes);
Device backend_device(BackendKind b);

// An owning host buffer with kGuardBytes of sentinel after the data. The data
// starts "unwritten": quiet NaN for floating dtypes, kGarbage bytes for integers.
struct Buffer {
  static constexpr size_t kGuardBytes = 64;
  static constexpr std::byte kSentinel{0xA5};
  static constexpr std::byte kGarbage{0xC3};  // an i64 of these is a large negative index
  std::vector<std::byte> bytes;
  TensorView view;  // always on the host

  Buffer() = default;
  Buffer(DType dt, Shape shape);
  void fill_unwritten();
  void fill_sentinel();
  bool sentinel_intact() const;
  std::vector<double> to_double() const;
  void from_double(const std::vector<double>& v);
};

struct OpInputs {
  std::vector<Buffer> buffers;  // in case order
  std::vector<bool> fp32;       // InputSpec::fp32 of each input
};

// The storage dtype of a floating input in a run of dtype `dt`: f64 in the
// reference run, f32 for InputSpec::fp32 inputs, else `dt`.
DType input_dtype(bool fp32, DType dt);

// Random inputs for case `c` in floating dtype `dt` (integer inputs are i64,
// fp32 inputs f32), so the values are exact in every later conversion.
OpInputs make_inputs(Op op, const OpCase& c, DType dt, uint64_t seed);
// Copies with floating inputs converted to input_dtype(fp32, dt).
OpInputs convert_inputs(const OpInputs& src, DType dt);
// The outputs infer() gives for `in` converted to dtype `dt`.
std::vector<OutputSpec> output_specs(Op op, const OpAttrs& a, const OpInputs& in, DType dt);
// v rounded through storage dtype `dt` (so every backend sees identical values).
std::vector<double> round_to(DType dt, const std::vector<double>& v);

struct OpRun {
  std::vector<Buffer> outputs;
  std::vector<Buffer> grad_inputs;  // empty Buffer (undefined view) when not differentiable
};

// Runs forward (and backward with `grad_out` in output-0 shape, when given).
// The reference run holds every floating buffer in f64; a backend run converts
// the inputs to `dt` (input_dtype) and takes the output dtypes from infer().
// Gradients have their input's dtype, grad_out output 0's.
OpRun run_reference(Op op, const OpAttrs& a, const OpInputs& in, const std::vector<double>* grad_out);
OpRun run_backend(BackendKind b, Op op, const OpAttrs& a, const OpInputs& in, DType dt,
                  const std::vector<double>* grad_out);
inline OpRun run_cpu(Op op, const OpAttrs& a, const OpInputs& in, DType dt,
                     const std::vector<double>* grad_out) {
  return run_backend(BackendKind::cpu, op, a, in, dt, grad_out);
}

// elementwise_error (tests/support/elementwise_error.h): max |x_i - y_i| /
// (|y_i| + mean |y|); a NaN or infinity on either side that the other does not
// match exactly is an infinite error.
double scaled_error(const std::vector<double>& x, const std::vector<double>& y, double floor_override = 0);

}  // namespace strata::testing
