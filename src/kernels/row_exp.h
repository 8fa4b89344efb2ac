#pragma once
// Private to the kernels: the max-subtracted exp of a masked row that softmax (normalizer.cpp)
// and log-softmax (softmax.cpp) share. In the per-level namespace: each ISA level keeps its
// own copy. The selects if-convert and the loops vectorise (no trapping math, see
// CMakeLists.txt), so a mask costs a select, not a branch.
#include <bit>
#include <cstdint>
#include <limits>

#include "fast_math.h"

namespace attn::kernels::inline ATTN_ISA_NS {

inline constexpr float kRowNegInf = -std::numeric_limits<float>::infinity();

// Max of scale · x over the kept positions; -inf when none is kept. scale > 0. kScaled false
// reads x as it is (scale 1 without the multiply: the plain softmax keeps its speed).
template <bool kScaled = true>
inline float row_max(const float* x, const int32_t* mask, float scale, int64_t n) {
  constexpr int32_t kNegInfBits = std::bit_cast<int32_t>(kRowNegInf);
  float m = kRowNegInf;
  if (mask) {
#pragma omp simd reduction(max : m)
    for (int64_t i = 0; i < n; ++i) {
      // masked entries read as -inf through a bit select (branch-free; x may be NaN there)
      const int32_t keep = -static_cast<int32_t>(mask[i] != 0);
      const float xs = kScaled ? scale * x[i] : x[i];
      const float xi = std::bit_cast<float>((std::bit_cast<int32_t>(xs) & keep) | (kNegInfBits & ~keep));
      m = xi > m ? xi : m;
    }
  } else {
#pragma omp simd reduction(max : m)
    for (int64_t i = 0; i < n; ++i) {
      const float xi = kScaled ? scale * x[i] : x[i];
      m = xi > m ? xi : m;
    }
  }
  return m;
}

// e[i] = exp(scale · x[i] − m) on kept positions, 0 elsewhere; returns Σ e. e may be null
// (the sum only) and may alias x. kScaled as row_max.
template <bool kScaled = true>
inline float exp_shifted(const float* x, const int32_t* mask, float scale, float m, float* e, int64_t n) {
  float s = 0.0f;
  if (mask && e) {
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; ++i) {
      float v = fast_exp((kScaled ? scale * x[i] : x[i]) - m);
      v = mask[i] != 0 ? v : 0.0f;
      e[i] = v;
      s += v;
    }
  } else if (mask) {
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; ++i) {
      const float v = fast_exp((kScaled ? scale * x[i] : x[i]) - m);
      s += mask[i] != 0 ? v : 0.0f;
    }
  } else if (e) {
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; ++i) {
      const float v = fast_exp((kScaled ? scale * x[i] : x[i]) - m);
      e[i] = v;
      s += v;
    }
  } else {
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; ++i) s += fast_exp((kScaled ? scale * x[i] : x[i]) - m);
  }
  return s;
}

inline void fill_zero(float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = 0.0f;
}

// Rows per parallel chunk: about 16K elements of work per chunk.
inline int64_t row_grain(int64_t n) { return n >= 16384 ? 1 : 16384 / (n < 1 ? 1 : n); }

}  // namespace attn::kernels::inline ATTN_ISA_NS
