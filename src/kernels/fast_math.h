#pragma once
// Vectorisable float transcendental functions for the fused kernels, and the `omp simd`
// loop hints. In the per-level namespace: each ISA level keeps its own copy. std::tanh / std::exp are libm calls that
// keep a loop scalar; these are plain arithmetic, so GCC vectorises the loops that use them (AVX2: 8 lanes).
#include <bit>
#include <cmath>
#include <cstdint>

#include "kernels/isa.h"

#ifdef _OPENMP
#define ATTN_SIMD _Pragma("omp simd")
#define ATTN_SIMD_SUM_ACC _Pragma("omp simd reduction(+ : acc)")
#else
#define ATTN_SIMD
#define ATTN_SIMD_SUM_ACC
#endif

namespace attn::kernels::inline ATTN_ISA_NS {

// Σ_i x_i y_i in 8 partial sums (one AVX register), added pairwise at the end. Written out
// rather than as an `omp simd reduction`: GCC left that scalar (a per-lane array) inside
// some callers' loop nests, while this form vectorises wherever it is inlined.
inline float dot(const float* x, const float* y, int64_t n) {
  float part[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) part[j] += x[i + j] * y[i + j];
  for (; i < n; ++i) part[i % 8] += x[i] * y[i];
  return ((part[0] + part[4]) + (part[1] + part[5])) + ((part[2] + part[6]) + (part[3] + part[7]));
}

// y += alpha x
inline void axpy(float alpha, const float* x, float* y, int64_t n) {
  ATTN_SIMD
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

// tanh: the odd/even rational minimax approximation Eigen uses, on x clamped to ±7.9053
// where tanh rounds to ±1 in float. Max error against the exact tanh ≈ 4e-7 absolute (a few
// ulp). The clamp works on the bit pattern (integer compares), so it vectorises without
// -fno-trapping-math, and NaN stays NaN.
inline float tanh_approx(float x) {
  constexpr int32_t kClampBits = std::bit_cast<int32_t>(7.90531110763549805f);
  constexpr int32_t kInfBits = 0x7f800000;
  const int32_t ix = std::bit_cast<int32_t>(x);
  int32_t ax = ix & 0x7fffffff;                           // |x| as an ordered integer
  const int32_t limit = ax > kInfBits ? ax : kClampBits;  // NaN is its own limit
  ax = ax < limit ? ax : limit;
  const float xc = std::bit_cast<float>(ax | (ix & static_cast<int32_t>(0x80000000u)));
  const float x2 = xc * xc;
  float p = -2.76076847742355e-16f;
  p = p * x2 + 2.00018790482477e-13f;
  p = p * x2 + -8.60467152213735e-11f;
  p = p * x2 + 5.12229709037114e-08f;
  p = p * x2 + 1.48572235717979e-05f;
  p = p * x2 + 6.37261928875436e-04f;
  p = p * x2 + 4.89352455891786e-03f;
  float q = 1.19825839466702e-06f;
  q = q * x2 + 1.18534705686654e-04f;
  q = q * x2 + 2.26843463243900e-03f;
  q = q * x2 + 4.89352518554385e-03f;
  return p * xc / q;
}

// The additive score of one query against one key: Σ_a v_a tanh(u_a + k_a) (the one form every
// additive energy is computed in, so a frame scored on its own equals it scored in a row).
inline float additive_score(const float* u, const float* k, const float* v, int64_t A) {
  float acc = 0.0f;
  ATTN_SIMD_SUM_ACC  // reduces into `acc`
      for (int64_t a = 0; a < A; ++a) acc += v[a] * tanh_approx(u[a] + k[a]);
  return acc;
}

// e^x, the one exp of the kernels: Cephes' expf polynomial, written so that loops calling it
// auto-vectorise (no libm call; the selects if-convert). Relative error below 2e-7 (1-2 ulp)
// for x in [-87.33, 88.72]; below that it returns 0 (the true value is under the smallest
// normal float, 1.18e-38), above it +inf; NaN stays NaN.
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

// σ(x) = 1 / (1 + e^{−x}), accurate to a few ulp in relative terms on both tails (so
// σ'(x) = σ(1 − σ) matches libm-based frameworks where the gate saturates). e^{−x} is capped
// at e^88 (finite), so σ stays > 0 for finite x far below 0, NaN gives NaN.
inline float sigmoid_approx(float x) {
  const float minus_x = -x;
  return 1.0f / (1.0f + fast_exp(minus_x > 88.0f ? 88.0f : minus_x));
}

// tanh accurate to a few ulp: the rational form near 0 (no cancellation), and
// sign(x) (1 − 2 / (e^{2|x|} + 1)) elsewhere.
inline float tanh_accurate(float x) {
  const float ax = x < 0.0f ? -x : x;
  const float tail = 1.0f - 2.0f / (fast_exp(2.0f * ax) + 1.0f);  // e^{2|x|} = inf: tail 1
  const float signed_tail = x < 0.0f ? -tail : tail;
  return ax < 0.625f ? tanh_approx(x) : signed_tail;
}

}  // namespace attn::kernels::inline ATTN_ISA_NS
