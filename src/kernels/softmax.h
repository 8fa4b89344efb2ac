#pragma once
// Softmax and log-softmax CPU kernels over contiguous rows: raw pointers and sizes, no
// checks, no allocation. Backward kernels accumulate (+=) into the input gradient.
//
// The row kernels are the building blocks fused attention ops call on their score rows.
// Masks are int32, one entry per element of the row: nonzero = keep, 0 = masked out.
// A null mask keeps everything.
//
// Conventions shared by every kernel here:
//   - max-subtracted: exp is only ever taken of (x - max) <= 0, so inputs of any finite
//     magnitude (1e3, 1e30) are stable;
//   - masked positions output exactly 0 and receive no gradient (their x may hold
//     anything, even inf or NaN: it is never read into the result);
//   - a row with no kept position (fully masked) outputs all zeros and gets zero
//     gradient, never NaN. A row whose kept entries are all -inf is treated the same way
//     by the forward kernels.
//   - reductions within a row run in a fixed order (the compiler's SIMD lanes, then a
//     fixed combine), so results never depend on the thread count.
#include <bit>
#include <cstdint>

#include "kernels/isa.h"

namespace attn::kernels::inline ATTN_ISA_NS {

// exp(x) for float, written so that loops calling it auto-vectorise (no libm call; the
// selects if-convert when the translation unit is compiled without trapping math, see
// src/kernels/softmax.cpp). Cephes' expf polynomial: relative error below 2e-7 (1-2 ulp)
// for x in [-87.33, 88.72]; below that it returns 0 (the true value is under the
// smallest normal float, 1.18e-38), above it +inf; NaN stays NaN.
inline float fast_exp(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;
  constexpr float kLn2Lo = -2.12194440e-4f;
  constexpr float kRound = 12582912.0f;  // 1.5 · 2^23
  // x = n ln2 + r, n = round(x log2 e) clamped to the normal exponents, |r| <= ln2 / 2
  float v = x * kLog2e;
  v = v < -126.0f ? -126.0f : v;
  v = v > 127.0f ? 127.0f : v;
  // round to nearest: exact for |v| < 2^22 (no -ffast-math, so the add/subtract stays)
  const float n = (v + kRound) - kRound;
  float r = x - n * kLn2Hi;
  r = r - n * kLn2Lo;
  const float r2 = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r2 + r + 1.0f;
  const float scale = std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);  // 2^n
  float result = p * scale;
  result = x < -87.33f ? 0.0f : result;
  result = x > 88.72f ? __builtin_inff() : result;
  return result;
}

}  // namespace attn::kernels::ATTN_ISA_NS

namespace attn::kernels {

// log(sum(exp(x))) over the kept positions of one row; -inf when none is kept (or every
// kept entry is -inf).
ATTN_KERNEL(logsumexp_row, float(const float* x, const int32_t* mask_or_null, int64_t n));

// y = softmax(x) over the kept positions, 0 elsewhere.                          // (n)
ATTN_KERNEL(softmax_row_forward, void(const float* x, const int32_t* mask_or_null, float* y, int64_t n));
// dx += y ⊙ (dy − Σ dy⊙y). Masked positions have y = 0, so they get no gradient without
// looking at the mask; a fully masked row (y = 0) gets none at all.
ATTN_KERNEL(softmax_row_backward, void(const float* y, const float* dy, float* dx, int64_t n));

// y = x − max − log Σ exp(x − max) over the kept positions, 0 elsewhere.        // (n)
ATTN_KERNEL(log_softmax_row_forward, void(const float* x, const int32_t* mask_or_null, float* y, int64_t n));
// dx += dy − exp(y) Σ_kept dy on kept positions; nothing on masked ones.
ATTN_KERNEL(log_softmax_row_backward,
            void(const float* y, const int32_t* mask_or_null, const float* dy, float* dx, int64_t n));

// The same over `rows` contiguous rows of length n, threaded over rows. Masks, when
// given, have the same (rows, n) layout as x.
ATTN_KERNEL(softmax_forward, void(const float* x, const int32_t* mask_or_null, float* y, int64_t rows, int64_t n));
ATTN_KERNEL(softmax_backward, void(const float* y, const float* dy, float* dx, int64_t rows, int64_t n));
ATTN_KERNEL(log_softmax_forward,
            void(const float* x, const int32_t* mask_or_null, float* y, int64_t rows, int64_t n));
ATTN_KERNEL(log_softmax_backward, void(const float* y, const int32_t* mask_or_null, const float* dy, float* dx,
            int64_t rows, int64_t n));

}  // namespace attn::kernels
