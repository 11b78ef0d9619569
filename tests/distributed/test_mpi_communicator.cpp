// Every Communicator op over MPI, on whatever rank count mpirun gives (CTest runs
// 2 and 4). Each rank fills its input from (rank, index) so that every rank can
// compute the expected result itself.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "base/error.h"
#include "distributed/launch_env.h"
#include "distributed/mpi_communicator.h"
#include "kernels/runtime/half.h"

namespace strata {
namespace {

MpiCommunicator& comm() {
  static MpiCommunicator c;  // one per process; MPI_Finalize runs at exit
  return c;
}

// Values with fractions of several magnitudes (-1.3 to 1.3, steps down to
// 0.0123), so that a sum of them in f16 or bf16 needs rounding: with small
// integers every half-precision sum was exact and a reduction that rounded
// wrongly, or twice, passed.
float value(int rank, size_t i) {
  return static_cast<float>(static_cast<int>((i * 7 + rank * 3) % 17) - 8) / 8.0f +
         0.0123f * static_cast<float>(rank + 1) * static_cast<float>(static_cast<int>(i % 5) - 2);
}

// value() as the dtype stores it: what each rank really contributes.
float stored(DType t, float v) {
  if (t == DType::f16) return f16_bits_to_float(float_to_f16_bits(v));
  if (t == DType::bf16) return bf16_bits_to_float(float_to_bf16_bits(v));
  return v;
}

// The exact sum of the stored inputs (double holds it exactly: at most 4 terms
// of 24 significant bits within a few binades).
double exact_sum(DType t, int size, size_t i) {
  double s = 0;
  for (int r = 0; r < size; ++r) s += stored(t, value(r, i));
  return s;
}

struct Case {
  DType dtype;
  ReduceOp op;
  size_t count;
};

std::string name(const Case& c) {
  return std::string(dtype_name(c.dtype)) + (c.op == ReduceOp::sum ? "_sum_" : "_avg_") +
         std::to_string(c.count);
}

std::vector<uint8_t> fill(DType t, int rank, size_t count, size_t offset = 0) {
  std::vector<uint8_t> buf(count * dtype_size(t));
  for (size_t i = 0; i < count; ++i) {
    float v = value(rank, offset + i);
    if (t == DType::f32) reinterpret_cast<float*>(buf.data())[i] = v;
    if (t == DType::f16) reinterpret_cast<uint16_t*>(buf.data())[i] = float_to_f16_bits(v);
    if (t == DType::bf16) reinterpret_cast<uint16_t*>(buf.data())[i] = float_to_bf16_bits(v);
  }
  return buf;
}

float read(DType t, const std::vector<uint8_t>& buf, size_t i) {
  if (t == DType::f32) return reinterpret_cast<const float*>(buf.data())[i];
  uint16_t b = reinterpret_cast<const uint16_t*>(buf.data())[i];
  return t == DType::f16 ? f16_bits_to_float(b) : bf16_bits_to_float(b);
}

// What the communicator promises for half precision: the exact sum (or mean)
// rounded once to the dtype. By default it gets there two ways: at 2 ranks one
// pairwise add in f32 rounded to half (one rounding), beyond 2 through f32
// buffers, whose sum of a few half values is exact, rounded back once
// (distributed/mpi_communicator.cpp). A reduction that rounds each partial sum
// to half, or truncates, misses this on many elements.
float expected(const Case& c, int size, size_t i) {
  double s = exact_sum(c.dtype, size, i);
  if (c.op == ReduceOp::avg) s /= size;
  return stored(c.dtype, static_cast<float>(s));
}

// f32: MPI adds in an order of its own, each add rounding at 2^-24 relative to
// a partial sum below 4 * 1.3: a few ulps of 5. Half precision: exact.
float tol(DType t) { return t == DType::f32 ? 4 * 5 * std::ldexp(1.0f, -24) : 0.0f; }

class Reduce : public ::testing::TestWithParam<Case> {};

TEST_P(Reduce, Allreduce) {
  const Case c = GetParam();
  auto& w = comm();
  auto buf = fill(c.dtype, w.rank(), c.count);
  w.allreduce(buf.data(), c.count, c.dtype, c.op);
  for (size_t i = 0; i < c.count; ++i)
    ASSERT_NEAR(read(c.dtype, buf, i), expected(c, w.size(), i), tol(c.dtype)) << "i=" << i;
}

TEST_P(Reduce, AllreduceAsyncWait) {
  const Case c = GetParam();
  auto& w = comm();
  auto a = fill(c.dtype, w.rank(), c.count);
  auto b = fill(c.dtype, w.rank(), c.count);
  auto ha = w.allreduce_async(a.data(), c.count, c.dtype, c.op);
  auto hb = w.allreduce_async(b.data(), c.count, c.dtype, c.op);  // two in flight
  while (!hb->test()) {
  }
  ha->wait();
  EXPECT_TRUE(ha->test());
  for (size_t i = 0; i < c.count; ++i) {
    ASSERT_NEAR(read(c.dtype, a, i), expected(c, w.size(), i), tol(c.dtype)) << "i=" << i;
    ASSERT_NEAR(read(c.dtype, b, i), expected(c, w.size(), i), tol(c.dtype)) << "i=" << i;
  }
}

TEST_P(Reduce, ReduceScatter) {
  const Case c = GetParam();
  auto& w = comm();
  size_t total = c.count * static_cast<size_t>(w.size());
  auto send = fill(c.dtype, w.rank(), total);
  std::vector<uint8_t> recv(c.count * dtype_size(c.dtype), 0xAB);
  w.reduce_scatter(send.data(), recv.data(), c.count, c.dtype, c.op);
  size_t base = static_cast<size_t>(w.rank()) * c.count;
  for (size_t i = 0; i < c.count; ++i)
    ASSERT_NEAR(read(c.dtype, recv, i), expected(c, w.size(), base + i), tol(c.dtype)) << "i=" << i;
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (DType t : {DType::f32, DType::f16, DType::bf16})
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg})
      for (size_t n : {size_t{1}, size_t{7}, size_t{1001}, size_t{262147}}) v.push_back({t, op, n});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Mpi, Reduce, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return name(info.param); });

TEST(MpiCommunicator, RankSizeAndLaunchEnvAgree) {
  auto& w = comm();
  LaunchEnv e = read_launch_env();
  EXPECT_EQ(e.source, "ompi-env");
  EXPECT_EQ(e.rank, w.rank());
  EXPECT_EQ(e.size, w.size());
  EXPECT_EQ(e.local_rank, w.local_rank());
  EXPECT_EQ(e.local_size, w.local_size());
  EXPECT_EQ(w.backend(), "mpi");
  EXPECT_GE(w.thread_level(), MPI_THREAD_FUNNELED);
}

TEST(MpiCommunicator, BroadcastFromEveryRoot) {
  auto& w = comm();
  for (int root = w.size() - 1; root >= 0; --root) {
    for (DType t : {DType::f32, DType::bf16, DType::i64}) {
      size_t n = 1003;
      std::vector<uint8_t> buf(n * dtype_size(t));
      for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i * 13 + w.rank() * 101);
      w.broadcast(buf.data(), n, t, root);
      for (size_t i = 0; i < buf.size(); ++i)
        ASSERT_EQ(buf[i], static_cast<uint8_t>(i * 13 + root * 101)) << "root=" << root << " byte " << i;
    }
  }
}

TEST(MpiCommunicator, AllgatherSeparateAndInPlace) {
  auto& w = comm();
  for (size_t n : {size_t{1}, size_t{5}, size_t{4099}}) {
    std::vector<float> send(n), recv(n * static_cast<size_t>(w.size()), -1.0f);
    for (size_t i = 0; i < n; ++i) send[i] = value(w.rank(), i);
    w.allgather(send.data(), recv.data(), n, DType::f32);
    for (int r = 0; r < w.size(); ++r)
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(recv[r * n + i], value(r, i));
    // in place: this rank's block already sits at rank * n
    std::vector<float> inplace(n * static_cast<size_t>(w.size()), -1.0f);
    for (size_t i = 0; i < n; ++i) inplace[w.rank() * n + i] = value(w.rank(), i);
    w.allgather(inplace.data() + w.rank() * n, inplace.data(), n, DType::f32);
    EXPECT_EQ(inplace, recv);
  }
}

TEST(MpiCommunicator, IntegerSumAndAvgRejected) {
  auto& w = comm();
  std::vector<int64_t> v(9, w.rank() + 1);
  w.allreduce(v.data(), v.size(), DType::i64, ReduceOp::sum);
  for (auto x : v) EXPECT_EQ(x, int64_t{w.size()} * (w.size() + 1) / 2);
  EXPECT_THROW(w.allreduce(v.data(), v.size(), DType::i32, ReduceOp::avg), CommError);
}

TEST(MpiCommunicator, HalfCustomOpMatchesConvert) {
  auto& w = comm();
  MpiOptions o;
  o.half_reduce_op = true;
  MpiCommunicator op_comm(o);
  for (DType t : {DType::f16, DType::bf16}) {
    Case c{t, ReduceOp::avg, 517};
    auto buf = fill(t, w.rank(), c.count);
    op_comm.allreduce(buf.data(), c.count, t, c.op);
    for (size_t i = 0; i < c.count; ++i) ASSERT_NEAR(read(t, buf, i), expected(c, w.size(), i), 0.05f) << i;
  }
}

TEST(MpiCommunicator, HalfConvertAndPollingAsync) {
  auto& w = comm();
  MpiOptions o;
  o.half_reduce_op = false;
  o.progress_thread = false;
  MpiCommunicator c(o);
  EXPECT_FALSE(c.uses_progress_thread());
  for (DType t : {DType::f16, DType::bf16}) {
    Case cs{t, ReduceOp::avg, 1025};
    auto a = fill(t, w.rank(), cs.count), b = fill(t, w.rank(), cs.count);
    auto h = c.allreduce_async(a.data(), cs.count, t, cs.op);
    c.allreduce(b.data(), cs.count, t, cs.op);
    while (!h->test()) {
    }
    h->wait();
    for (size_t i = 0; i < cs.count; ++i) {
      ASSERT_NEAR(read(t, a, i), expected(cs, w.size(), i), tol(t)) << i;
      ASSERT_NEAR(read(t, b, i), expected(cs, w.size(), i), tol(t)) << i;
    }
  }
}

TEST(MpiCommunicator, ProgressThreadAsync) {
  auto& w = comm();
  MpiOptions o;
  o.progress_thread = true;
  MpiCommunicator pc(o);
  Case c{DType::f32, ReduceOp::sum, 100003};
  auto a = fill(c.dtype, w.rank(), c.count);
  auto h = pc.allreduce_async(a.data(), c.count, c.dtype, c.op);
  h->wait();
  for (size_t i = 0; i < c.count; ++i)
    ASSERT_NEAR(read(c.dtype, a, i), expected(c, w.size(), i), tol(c.dtype));
  pc.barrier();
}

TEST(MpiCommunicator, BadRootIsCommError) {
  auto& w = comm();
  float x = 0;
  try {
    w.broadcast(&x, 1, DType::f32, w.size());
    FAIL() << "no throw";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("root"), std::string::npos) << e.what();
  }
}

TEST(MpiCommunicator, FactoryAutoPicksMpiUnderMpirun) {
  auto c = make_communicator("auto");
  EXPECT_EQ(c->backend(), comm().size() > 1 ? "mpi" : "single");
  EXPECT_EQ(make_communicator("single")->backend(), "single");
  EXPECT_THROW(make_communicator("gloo"), ConfigError);
}

// distributed.backend=auto with the ranks' devices: one rank on the CPU makes all
// of them use MPI (the others claim a GPU; the decision never opens one).
TEST(MpiCommunicator, FactoryAutoWithACpuRankPicksMpiOnEveryRank) {
  if (comm().size() == 1) GTEST_SKIP() << "needs several ranks";
  const int last = comm().size() - 1;
  Device mine = comm().rank() == last ? Device::cpu : Device::cuda;
  EXPECT_EQ(make_communicator("auto", mine)->backend(), "mpi");
  EXPECT_EQ(make_communicator("auto", Device::cpu)->backend(), "mpi");
  EXPECT_THROW(make_communicator("nccl", mine), ConfigError);  // on every rank alike
}

}  // namespace
}  // namespace strata
