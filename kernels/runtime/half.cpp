// Bulk f16/bf16 <-> f32 conversion. F16C's vcvtps2ph with imm 0 rounds to nearest
// even, matching the scalar path bit for bit; the scalar path handles tails and
// machines without F16C.
// GCC 12 warns about its own AVX-512 intrinsic headers (_mm512_undefined_epi32).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "kernels/runtime/half.h"

#if defined(__F16C__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace strata {

void f16_to_f32(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < n; ++i) dst[i] = f16_bits_to_float(src[i]);
}

void f32_to_f16(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
#endif
  for (; i < n; ++i) dst[i] = float_to_f16_bits(src[i]);
}

void bf16_to_f32(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16) {
    __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    __m512i w = _mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16);
    _mm512_storeu_ps(dst + i, _mm512_castsi512_ps(w));
  }
#endif
  for (; i < n; ++i) dst[i] = bf16_bits_to_float(src[i]);
}

void f32_to_bf16(const float* src, uint16_t* dst, size_t n) {
  // The scalar loop auto-vectorises; NaN handling keeps it exact.
  for (size_t i = 0; i < n; ++i) dst[i] = float_to_bf16_bits(src[i]);
}

}  // namespace strata
