// NCCL backend on device buffers (gpu label). Without CUDA, NCCL or enough
// devices (one per local rank) every test reports SKIPPED with the reason.
#include "distributed/cuda/nccl_communicator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "distributed/launch_env.h"
#include "kernels/half.h"
#ifdef STRATA_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace strata {
namespace {

// The communicator, or null with the reason to skip.
Communicator* nccl_comm(std::string& why) {
  static std::unique_ptr<Communicator> c;
  static std::string reason;
  static bool tried = false;
  if (!tried) {
    tried = true;
    NcclAvailability a = nccl_availability();
    LaunchEnv e = read_launch_env();
    if (!a.ok)
      reason = a.reason;
    else if (a.device_count < e.local_size)
      reason = std::to_string(e.local_size) + " local ranks need as many CUDA devices; " +
               std::to_string(a.device_count) + " visible";
    else
      c = make_communicator("nccl");
  }
  why = reason;
  return c.get();
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

}  // namespace
}  // namespace strata
