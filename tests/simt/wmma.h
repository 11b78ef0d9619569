// nvcuda::wmma for the host SIMT emulator, by its documented semantics: a
// 16x16x16 fragment loaded from memory with the given layout and leading
// dimension, multiplied with FP32 accumulation, stored with a layout. Lane 0 of
// the warp does the warp's work on its copy of the fragments and the warp meets
// at __syncwarp after each call (every lane must make it, as on the device); the
// other lanes' copies are never read. Only the m16n16k16 shape the attention
// kernels use is provided.
#pragma once
#include <type_traits>

#include "simt.h"

namespace nvcuda::wmma {
struct row_major {};
struct col_major {};
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
  static_assert(M == 16 && N == 16 && K == 16, "the emulator provides the m16n16k16 WMMA shape only");
  float x[16][16];
};

namespace detail {
template <typename T>
float widen(T v) {
  if constexpr (std::is_same_v<T, float>)
    return v;
  else
    return static_cast<float>(v);  // __half and __nv_bfloat16 convert exactly
}
inline void warp_done() { simt::syncwarp(0xffffffffu, std::source_location::current()); }
template <typename T>
void load_tile(float (&x)[16][16], const T* p, unsigned ldm, bool row_major) {
  if (simt::lane_id() == 0)
    for (unsigned r = 0; r < 16; ++r)
      for (unsigned c = 0; c < 16; ++c) x[r][c] = widen(row_major ? p[r * ldm + c] : p[c * ldm + r]);
  warp_done();
}
}  // namespace detail

template <typename Use, typename T, typename L>
void load_matrix_sync(fragment<Use, 16, 16, 16, T, L>& f, const T* p, unsigned ldm) {
  detail::load_tile(f.x, p, ldm, std::is_same_v<L, row_major>);
}
inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float>& f, const float* p, unsigned ldm,
                             layout_t layout) {
  detail::load_tile(f.x, p, ldm, layout == mem_row_major);
}
inline void fill_fragment(fragment<accumulator, 16, 16, 16, float>& f, float v) {
  for (auto& row : f.x)
    for (auto& e : row) e = v;
}
template <typename A, typename B>
void mma_sync(fragment<accumulator, 16, 16, 16, float>& d, const A& a, const B& b,
              const fragment<accumulator, 16, 16, 16, float>& c) {
  if (simt::lane_id() == 0)
    for (int r = 0; r < 16; ++r)
      for (int n = 0; n < 16; ++n) {
        float s = c.x[r][n];
        for (int k = 0; k < 16; ++k) s += a.x[r][k] * b.x[k][n];
        d.x[r][n] = s;
      }
  detail::warp_done();
}
inline void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, 16, float>& f, unsigned ldm,
                              layout_t layout) {
  if (simt::lane_id() == 0)
    for (unsigned r = 0; r < 16; ++r)
      for (unsigned c = 0; c < 16; ++c)
        (layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r]) = f.x[r][c];
  detail::warp_done();
}
}  // namespace nvcuda::wmma
