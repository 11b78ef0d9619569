// IEEE binary16 (f16) and bfloat16 storage types with round-to-nearest-even
// conversion. Scalar conversions are usable from CUDA too (STRATA_HD); bulk
// conversions on the CPU use F16C / AVX-512 where the compiler targets them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/runtime/host_device.h"

namespace strata {

STRATA_HD inline uint32_t float_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}
STRATA_HD inline float bits_float(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

// float -> binary16 bits, round to nearest, ties to even; overflow -> inf; NaN kept quiet.
STRATA_HD inline uint16_t float_to_f16_bits(float f) {
  uint32_t x = float_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u |
                                 (absx > 0x7f800000u ? 0x200u | ((absx >> 13) & 0x3ffu) : 0u));
  }
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (absx < 0x38800000u) {                                      // result is subnormal or zero in f16
    if (absx < 0x33000000u) return static_cast<uint16_t>(sign);  // < 2^-25: rounds to 0
    uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
    int shift = 126 - static_cast<int>(absx >> 23);  // 14 + (113 - exp) ... see below
    // value = mant * 2^(exp-150); f16 subnormal unit = 2^-24 -> q = mant >> (126 - exp)
    uint32_t q = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  // normal: rebias exponent (127 -> 15) and round the 13 dropped bits
  uint32_t r = absx - 0x38000000u;
  uint32_t q = r >> 13;
  uint32_t rem = r & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ++q;
  return static_cast<uint16_t>(sign | q);
}

STRATA_HD inline float f16_bits_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  // inf, or NaN made quiet (as IEEE conversions and F16C do)
  if (exp == 0x1fu) return bits_float(sign | 0x7f800000u | (mant << 13) | (mant ? 0x400000u : 0u));
  if (exp == 0) {
    if (mant == 0) return bits_float(sign);
    // subnormal: mant * 2^-24
    float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

// float -> bfloat16 bits, round to nearest even; NaN stays NaN.
STRATA_HD inline uint16_t float_to_bf16_bits(float f) {
  uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

STRATA_HD inline float bf16_bits_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

struct f16_t {
  uint16_t bits = 0;
  f16_t() = default;
  STRATA_HD explicit f16_t(float f) : bits(float_to_f16_bits(f)) {}
  STRATA_HD explicit operator float() const { return f16_bits_to_float(bits); }
};

struct bf16_t {
  uint16_t bits = 0;
  bf16_t() = default;
  STRATA_HD explicit bf16_t(float f) : bits(float_to_bf16_bits(f)) {}
  STRATA_HD explicit operator float() const { return bf16_bits_to_float(bits); }
};

// Bulk conversions (CPU; vectorised with F16C / AVX-512 BF16 when available).
void f16_to_f32(const uint16_t* src, float* dst, size_t n);
void f32_to_f16(const float* src, uint16_t* dst, size_t n);
void bf16_to_f32(const uint16_t* src, float* dst, size_t n);
void f32_to_bf16(const float* src, uint16_t* dst, size_t n);

}  // namespace strata
