// TraceRange: a named span of the host thread's work, shown by Nsight Systems
// as an NVTX range (nsys profile -t cuda,nvtx; docs/monitoring.md), so that a
// training step reads as data wait, h2d, forward, backward, allreduce and
// optimizer on the timeline. In a build without CUDA it is an empty object
// and compiles to nothing; with CUDA a push and a pop are a call each and
// allocate nothing, profiled or not. The name must outlive the range (a
// string literal).
#pragma once
#include <type_traits>

namespace strata {

#if STRATA_HAVE_CUDA
// kernels/cuda/trace_range.cpp: nvtxRangePushA / nvtxRangePop (NVTX 3, header-only).
void trace_range_push(const char* name);
void trace_range_pop();
#endif

class TraceRange {
 public:
  explicit TraceRange(const char* name) {
#if STRATA_HAVE_CUDA
    trace_range_push(name);
    open_ = true;
#else
    (void)name;
#endif
  }
  ~TraceRange() { end(); }
  TraceRange(const TraceRange&) = delete;
  TraceRange& operator=(const TraceRange&) = delete;

  // Ends the range before the scope does; the destructor then does nothing.
  void end() {
#if STRATA_HAVE_CUDA
    if (open_) trace_range_pop();
    open_ = false;
#endif
  }

 private:
#if STRATA_HAVE_CUDA
  bool open_ = false;
#endif
};

#if !STRATA_HAVE_CUDA
static_assert(std::is_empty_v<TraceRange>, "without CUDA a TraceRange holds and does nothing");
#endif

}  // namespace strata
