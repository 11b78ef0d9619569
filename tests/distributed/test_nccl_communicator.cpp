// NCCL backend (gpu label): collectives on device buffers, host buffers handed
// to MPI, and an async allreduce ordered before the compute stream by event.
// Without CUDA, NCCL or enough devices (one per local rank) every test reports
// SKIPPED with the reason.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "distributed/cuda/nccl_communicator.h"
#include "distributed/cuda/stream_order.h"
#include "distributed/launch_env.h"
#include "kernels/device_ops.h"
#include "kernels/runtime/half.h"
#include "nccl_test_comm.h"
#ifdef STRATA_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace strata {
namespace {

// The communicator, or null with the reason to skip (tests/support/nccl_test_comm.h;
// test_nccl_single_rank: one rank, no MPI, host buffers to a SingleProcessCommunicator).
Communicator* nccl_comm(std::string& why) {
  return testing::nccl_test_comm(why, [] { return make_communicator("nccl"); });
}

#define NCCL_OR_SKIP(c)              \
  std::string why_;                  \
  Communicator* c = nccl_comm(why_); \
  if (!c) GTEST_SKIP() << why_

float value(int rank, size_t i) { return static_cast<float>(static_cast<int>((i * 5 + rank * 3) % 13) - 6); }

#ifdef STRATA_HAVE_CUDA
template <class T>
struct DeviceBuffer {
  explicit DeviceBuffer(const std::vector<T>& h) : n(h.size()) {
    cudaMalloc(&p, n * sizeof(T));
    cudaMemcpy(p, h.data(), n * sizeof(T), cudaMemcpyHostToDevice);
  }
  ~DeviceBuffer() { cudaFree(p); }
  std::vector<T> host() const {
    std::vector<T> h(n);
    cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
    return h;
  }
  T* p = nullptr;
  size_t n;
};
#endif

TEST(Nccl, AllreduceF32AndBf16SumAvgSyncAndAsync) {
  NCCL_OR_SKIP(c);
#ifdef STRATA_HAVE_CUDA
  int R = c->size();
  for (size_t n : {size_t{1}, size_t{1001}, size_t{1} << 20}) {
    std::vector<float> h(n);
    std::vector<uint16_t> hb(n);
    for (size_t i = 0; i < n; ++i) {
      h[i] = value(c->rank(), i);
      hb[i] = float_to_bf16_bits(h[i]);
    }
    DeviceBuffer<float> d(h), da(h);
    DeviceBuffer<uint16_t> db(hb);
    c->allreduce(d.p, n, DType::f32, ReduceOp::sum);
    auto hnd = c->allreduce_async(da.p, n, DType::f32, ReduceOp::avg);
    c->allreduce(db.p, n, DType::bf16, ReduceOp::sum);
    hnd->wait();
    auto s = d.host(), a = da.host();
    auto b = db.host();
    for (size_t i = 0; i < n; ++i) {
      float e = 0;
      for (int r = 0; r < R; ++r) e += value(r, i);
      ASSERT_EQ(s[i], e) << i;
      ASSERT_NEAR(a[i], e / R, 1e-6) << i;
      ASSERT_EQ(bf16_bits_to_float(b[i]), e) << i;
    }
  }
#endif
}

TEST(Nccl, BroadcastAllgatherReduceScatter) {
  NCCL_OR_SKIP(c);
#ifdef STRATA_HAVE_CUDA
  int R = c->size(), me = c->rank();
  size_t n = 4097;
  std::vector<float> h(n * R);
  for (size_t i = 0; i < h.size(); ++i) h[i] = value(me, i);
  DeviceBuffer<float> bc(h);
  c->broadcast(bc.p, n, DType::f32, R - 1);
  auto b = bc.host();
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(b[i], value(R - 1, i));

  DeviceBuffer<float> send(std::vector<float>(h.begin(), h.begin() + n)), recv(std::vector<float>(n * R, -1));
  c->allgather(send.p, recv.p, n, DType::f32);
  auto g = recv.host();
  for (int r = 0; r < R; ++r)
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(g[r * n + i], value(r, i));

  DeviceBuffer<float> rs_send(h), rs_recv(std::vector<float>(n, -1));
  c->reduce_scatter(rs_send.p, rs_recv.p, n, DType::f32, ReduceOp::sum);
  auto rs = rs_recv.host();
  for (size_t i = 0; i < n; ++i) {
    float e = 0;
    for (int r = 0; r < R; ++r) e += value(r, me * n + i);
    ASSERT_EQ(rs[i], e) << i;
  }
  c->barrier();
#endif
}

// The trainer's metric sums, model checks and broadcasts of host data: over MPI
// (one rank without MPI: the single-process communicator).
TEST(Nccl, HostBuffersGoOverMpi) {
  NCCL_OR_SKIP(c);
  int R = c->size(), me = c->rank();
  std::vector<double> sums = {1.0 * me, 0.5};
  c->allreduce(sums.data(), sums.size(), DType::f64, ReduceOp::sum);
  EXPECT_EQ(sums[0], R * (R - 1) / 2.0);
  EXPECT_EQ(sums[1], 0.5 * R);
  std::vector<char> text(32, 0);
  if (me == 0) std::string("runs/x-0").copy(text.data(), 31);
  c->broadcast(text.data(), text.size(), DType::u8, 0);
  EXPECT_EQ(std::string(text.data()), "runs/x-0");
  int64_t mine = 10 + me;
  std::vector<int64_t> all(static_cast<size_t>(R));
  c->allgather(&mine, all.data(), 1, DType::i64);
  for (int r = 0; r < R; ++r) EXPECT_EQ(all[static_cast<size_t>(r)], 10 + r);
  auto h = c->allreduce_async(sums.data(), 1, DType::f64, ReduceOp::avg);
  h->wait();
  EXPECT_EQ(sums[0], R * (R - 1) / 2.0);
}

// Device gradients the way BucketedGradientSync handles them: written by a device
// op on the compute stream, reduced on NCCL's stream (which waits by event), then
// read by a device op queued on the compute stream after order_before().
TEST(Nccl, AsyncAllreduceOrderedBeforeTheComputeStream) {
  NCCL_OR_SKIP(c);
  auto* ordered = stream_ordered(*c);
  ASSERT_NE(ordered, nullptr) << "the NCCL communicator is stream-ordered";
  int R = c->size();
  const size_t n = size_t{1} << 22;  // large enough that an unordered read would see the old values
  Tensor t = Tensor::zeros({static_cast<int64_t>(n)}, DType::f32, Device::cuda);
  dev::fill(t.view(), 1.0 + c->rank());  // on the compute stream
  auto h = c->allreduce_async(t.device_data(), n, DType::f32, ReduceOp::sum);
  auto* oh = dynamic_cast<StreamOrderedHandle*>(h.get());
  ASSERT_NE(oh, nullptr);
  oh->order_before(compute_stream());
  dev::scale(t.view(), 2.0);  // after the allreduce, on the compute stream
  h.reset();                  // ordered: destroying it waits for nothing
  auto v = t.to_float_vector();
  const float want = 2.0f * R * (R + 1) / 2.0f;
  for (size_t i = 0; i < n; i += 4097) ASSERT_EQ(v[i], want) << i;
  ASSERT_EQ(v[n - 1], want);
}

}  // namespace
}  // namespace strata
