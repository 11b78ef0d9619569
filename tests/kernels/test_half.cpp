// Exhaustive checks of the f16/bf16 conversions in kernels/runtime/half.h against an
// independent computation: every f16 and bf16 bit pattern, every rounding
// boundary between neighbouring half values (the exact tie and the floats on
// either side of it), subnormals, overflow to inf, NaN, and a million random
// floats; bulk (F16C / AVX-512) and scalar conversions must agree bit for bit.
#include <gtest/gtest.h>

#include <bit>
#include <cfenv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kernels/runtime/half.h"

namespace strata {
namespace {

constexpr uint16_t kF16Inf = 0x7c00, kBf16Inf = 0x7f80;

bool f16_is_nan(uint16_t h) { return (h & 0x7fff) > kF16Inf; }
bool bf16_is_nan(uint16_t b) { return (b & 0x7fff) > kBf16Inf; }

// Value of an f16 pattern from its fields with ldexp: (1024 + m) 2^(e-25), or m 2^-24 when e = 0.
double f16_value(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double s = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 0x1f) return m ? NAN : s * INFINITY;
  return s * (e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25));
}

// Round |x| to a grid with `mant_bits` explicit mantissa bits and minimum normal
// exponent `emin`, ties to even, by exact long-double division by the grid step.
// Returns the magnitude bits; the carry of R = 2^(mant_bits+1) into the exponent
// (and from the top binade into inf) falls out of the single formula.
uint32_t round_to_grid(float x, int mant_bits, int emin, int emax, uint32_t inf_bits) {
  long double a = std::fabs(static_cast<long double>(x));
  if (std::isinf(a)) return inf_bits;
  if (a == 0) return 0;
  int e2;
  std::frexp(a, &e2);
  int E = e2 - 1;  // floor(log2 a)
  if (E > emax) return inf_bits;
  if (E < emin) E = emin;                               // subnormal: the grid step stays 2^(emin - mant_bits)
  long double q = a / std::ldexp(1.0L, E - mant_bits);  // exact: division by a power of two
  auto R = static_cast<int64_t>(std::nearbyint(q));     // default rounding mode: ties to even
  int64_t bits = (static_cast<int64_t>(E - emin + 1) << mant_bits) + (R - (int64_t{1} << mant_bits));
  return static_cast<uint32_t>(bits);
}

uint16_t ref_f16(float x) {
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  return static_cast<uint16_t>(sign | round_to_grid(x, 10, -14, 15, kF16Inf));
}
uint16_t ref_bf16(float x) {
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  return static_cast<uint16_t>(sign | round_to_grid(x, 7, -126, 127, kBf16Inf));
}

// Floats at every rounding boundary of a 16-bit format: each finite value, the
// exact midpoint to its upper neighbour, and the floats just either side of it.
template <typename ToFloat>
std::vector<float> boundary_floats(ToFloat to_float, uint16_t inf_bits) {
  std::vector<float> v;
  for (uint32_t h = 0; h < inf_bits; ++h) {
    double lo = to_float(static_cast<uint16_t>(h));
    // upper neighbour of the largest finite value: the next grid step, where rounding goes to inf
    double hi = h + 1 < inf_bits ? to_float(static_cast<uint16_t>(h + 1))
                                 : 2 * lo - to_float(static_cast<uint16_t>(h - 1));
    auto mid = static_cast<float>((lo + hi) / 2);
    EXPECT_EQ(static_cast<double>(mid), (lo + hi) / 2) << "midpoint not exact for " << h;
    for (float f : {static_cast<float>(lo), mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
      v.push_back(f);
      v.push_back(-f);
    }
  }
  // float subnormals and the smallest floats: all round to zero or the first half subnormals
  for (uint32_t bits : {0x00000001u, 0x00400000u, 0x007fffffu, 0x00800000u, 0x33000000u, 0x33000001u,
                        0x32ffffffu, 0x33800000u, 0x33c00000u, 0x7f7fffffu})
    v.push_back(std::bit_cast<float>(bits));
  v.push_back(INFINITY);
  v.push_back(-INFINITY);
  return v;
}

std::vector<float> random_floats(size_t n) {
  std::mt19937 rng(12345);
  std::vector<float> v;
  while (v.size() < n) {
    float f = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    if (!std::isnan(f)) v.push_back(f);
  }
  // plus values in the half range, where most of the interesting rounding happens
  std::uniform_real_distribution<float> u(-70000.0f, 70000.0f);
  for (size_t i = 0; i < n; ++i) v.push_back(u(rng) * std::ldexp(1.0f, -static_cast<int>(rng() % 40)));
  return v;
}

std::vector<uint32_t> nan_floats() {
  return {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fbfffffu,
          0x7fffffffu, 0x7fa00000u, 0x7f802000u, 0xffffe000u, 0x7f801fffu};
}

TEST(Half, RoundingModeIsNearestEven) { ASSERT_EQ(std::fegetround(), FE_TONEAREST); }

TEST(Half, EveryF16PatternDecodesAndRoundTrips) {
  for (uint32_t i = 0; i < 65536; ++i) {
    auto h = static_cast<uint16_t>(i);
    float f = f16_bits_to_float(h);
    if (f16_is_nan(h)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      uint16_t back = float_to_f16_bits(f);
      ASSERT_TRUE(f16_is_nan(back)) << std::hex << h;
      ASSERT_EQ(back & 0x8000, h & 0x8000) << "NaN sign lost " << std::hex << h;
      ASSERT_EQ(back & 0x1ff, h & 0x1ff) << "NaN payload lost " << std::hex << h;
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), f16_value(h)) << std::hex << h;
    ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << h;
    ASSERT_EQ(float_to_f16_bits(f), h) << std::hex << h;
    ASSERT_EQ(ref_f16(f), h) << "reference disagrees with itself at " << std::hex << h;
  }
}

TEST(Half, EveryBf16PatternRoundTrips) {
  for (uint32_t i = 0; i < 65536; ++i) {
    auto b = static_cast<uint16_t>(i);
    float f = bf16_bits_to_float(b);
    ASSERT_EQ(std::bit_cast<uint32_t>(f), i << 16);
    uint16_t back = float_to_bf16_bits(f);
    if (bf16_is_nan(b)) {
      ASSERT_TRUE(bf16_is_nan(back) && (back & 0x8000) == (b & 0x8000)) << std::hex << b;
      continue;
    }
    ASSERT_EQ(back, b) << std::hex << b;
  }
}

TEST(Half, FloatToF16RoundsToNearestEven) {
  auto floats = boundary_floats(f16_value, kF16Inf);
  auto more = random_floats(500000);
  floats.insert(floats.end(), more.begin(), more.end());
  for (float f : floats) ASSERT_EQ(float_to_f16_bits(f), ref_f16(f)) << std::hexfloat << f;
  // hand-checked anchors: ties to even, subnormal ties, overflow
  EXPECT_EQ(float_to_f16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie -> even (1.0)
  EXPECT_EQ(float_to_f16_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie -> even (1 + 2^-9)
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.0f, -25)), 0x0000);             // half the smallest subnormal -> 0
  EXPECT_EQ(float_to_f16_bits(std::ldexp(3.0f, -25)), 0x0002);             // 1.5 units -> 2 (even)
  EXPECT_EQ(float_to_f16_bits(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_f16_bits(65519.996f), 0x7bff);
  EXPECT_EQ(float_to_f16_bits(65520.0f), 0x7c00);  // tie between max and 2^16 -> inf
  EXPECT_EQ(float_to_f16_bits(-1e10f), 0xfc00);
  EXPECT_EQ(float_to_f16_bits(-0.0f), 0x8000);
  for (uint32_t n : nan_floats()) {
    uint16_t h = float_to_f16_bits(std::bit_cast<float>(n));
    EXPECT_TRUE(f16_is_nan(h)) << std::hex << n;
    EXPECT_EQ(h & 0x8000, (n >> 16) & 0x8000) << std::hex << n;
  }
}

TEST(Half, FloatToBf16RoundsToNearestEven) {
  auto floats =
      boundary_floats([](uint16_t b) { return static_cast<double>(bf16_bits_to_float(b)); }, kBf16Inf);
  auto more = random_floats(500000);
  floats.insert(floats.end(), more.begin(), more.end());
  for (float f : floats) ASSERT_EQ(float_to_bf16_bits(f), ref_bf16(f)) << std::hexfloat << f;
  EXPECT_EQ(float_to_bf16_bits(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie -> even
  EXPECT_EQ(float_to_bf16_bits(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(float_to_bf16_bits(std::bit_cast<float>(0x7f7fffffu)), 0x7f80);  // FLT_MAX -> inf
  EXPECT_EQ(float_to_bf16_bits(std::bit_cast<float>(0x00008000u)), 0x0000);  // subnormal tie -> even (0)
  EXPECT_EQ(float_to_bf16_bits(std::bit_cast<float>(0x00018000u)), 0x0002);  // subnormal tie -> even (2)
  for (uint32_t n : nan_floats()) {
    uint16_t b = float_to_bf16_bits(std::bit_cast<float>(n));
    EXPECT_TRUE(bf16_is_nan(b)) << "NaN " << std::hex << n << " became " << b;
    EXPECT_EQ(b & 0x8000, (n >> 16) & 0x8000) << std::hex << n;
  }
}

#if defined(__FLT16_MANT_DIG__)
// A second, compiler-provided yardstick: GCC's _Float16 conversion (IEEE, RNE).
TEST(Half, FloatToF16MatchesCompilerFloat16) {
  auto floats = boundary_floats(f16_value, kF16Inf);
  auto more = random_floats(200000);
  floats.insert(floats.end(), more.begin(), more.end());
  for (float f : floats) {
    volatile float vf = f;  // keep the conversion at run time
    auto h = std::bit_cast<uint16_t>(static_cast<_Float16>(vf));
    ASSERT_EQ(float_to_f16_bits(f), h) << std::hexfloat << f;
  }
}
#endif

// Bulk (F16C / AVX-512) against scalar on every f16 and bf16 pattern and every
// boundary float, at several offsets so that both the vector body and the scalar
// tail run. `nan_inputs` selects the NaN patterns alone; the others are checked
// without them, so that a NaN-payload difference is reported on its own.
struct BulkMismatches {
  std::vector<std::string> found;
  std::map<std::string, int> per_fn;
  void check(bool same, const char* fn, uint32_t input) {
    if (!same && per_fn[fn]++ < 3) {  // the first few of each conversion
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s(0x%x)", fn, input);
      found.emplace_back(buf);
    }
  }
};

BulkMismatches bulk_vs_scalar(bool nan_inputs) {
  BulkMismatches r;
  std::vector<uint16_t> f16s, bf16s;
  for (uint32_t i = 0; i < 65536; ++i) {
    auto h = static_cast<uint16_t>(i);
    if (f16_is_nan(h) == nan_inputs) f16s.push_back(h);
    if (bf16_is_nan(h) == nan_inputs) bf16s.push_back(h);
  }
  std::vector<float> floats;
  if (nan_inputs)
    for (uint32_t n : nan_floats()) floats.push_back(std::bit_cast<float>(n));
  else
    floats = boundary_floats(f16_value, kF16Inf);
  for (size_t off = 0; off < 17; off += 5) {
    auto widen = [&](const std::vector<uint16_t>& src, auto bulk, auto scalar, const char* name) {
      if (src.size() <= off) return;
      size_t n = src.size() - off;
      std::vector<float> f(n);
      bulk(src.data() + off, f.data(), n);
      for (size_t i = 0; i < n; ++i)
        r.check(std::bit_cast<uint32_t>(f[i]) == std::bit_cast<uint32_t>(scalar(src[off + i])), name,
                src[off + i]);
    };
    widen(f16s, f16_to_f32, f16_bits_to_float, "f16_to_f32");
    widen(bf16s, bf16_to_f32, bf16_bits_to_float, "bf16_to_f32");
    auto narrow = [&](auto bulk, auto scalar, const char* name) {
      if (floats.size() <= off) return;
      size_t m = floats.size() - off;
      std::vector<uint16_t> h(m);
      bulk(floats.data() + off, h.data(), m);
      for (size_t i = 0; i < m; ++i)
        r.check(h[i] == scalar(floats[off + i]), name, std::bit_cast<uint32_t>(floats[off + i]));
    };
    narrow(f32_to_f16, float_to_f16_bits, "f32_to_f16");
    narrow(f32_to_bf16, float_to_bf16_bits, "f32_to_bf16");
  }
  return r;
}

TEST(Half, BulkMatchesScalarBitForBit) {
  auto r = bulk_vs_scalar(false);
  EXPECT_TRUE(r.found.empty()) << "first mismatches: " << ::testing::PrintToString(r.found);
}

// NaNs too must convert identically (the bulk path promises bit-for-bit agreement).
// IEEE conversions return a quiet NaN, as F16C's vcvtph2ps does; a scalar
// f16_bits_to_float that keeps a signalling NaN signalling differs from it.
TEST(Half, BulkMatchesScalarBitForBitOnNaNs) {
  auto r = bulk_vs_scalar(true);
  EXPECT_TRUE(r.found.empty())
      << "first mismatches: " << ::testing::PrintToString(r.found)
      << " (a signalling f16 NaN must widen to a quiet float NaN: float bit 0x400000 set)";
}

TEST(Half, StorageTypesUseTheScalarConversions) {
  for (float f : {0.1f, -3.5f, 65520.0f, 1e-7f}) {
    EXPECT_EQ(f16_t(f).bits, float_to_f16_bits(f));
    EXPECT_EQ(bf16_t(f).bits, float_to_bf16_bits(f));
    EXPECT_EQ(static_cast<float>(f16_t(f)), f16_bits_to_float(float_to_f16_bits(f)));
  }
}

}  // namespace
}  // namespace strata
