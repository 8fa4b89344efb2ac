// Dynamic per-row quantization of the int8 GEMM's activations, and the dequantization of its
// int32 sums (kernels/quantize.h). Every loop is branch-free so that each ISA level's copy
// vectorises (no trapping math, see CMakeLists.txt): a scalar max with std::max's NaN rule
// and a per-element finite flag kept the scan of max |x| at one element per cycle.
#include "kernels/quantize.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

namespace attn::kernels::inline ATTN_ISA_NS {

void quantize_rows_u8(const float* src, int64_t ld, int64_t rows, int64_t cols, uint8_t* dst, float* scale) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* x = src + i * ld;
    uint8_t* q = dst + i * cols;
    // max |x| over the row; `nan` counts NaNs (which no comparison selects), an inf shows in amax
    float amax = 0.0f;
    int32_t nan = 0;
#pragma omp simd reduction(max : amax) reduction(| : nan)
    for (int64_t j = 0; j < cols; ++j) {
      const float a = std::fabs(x[j]);
      amax = a > amax ? a : amax;
      nan |= static_cast<int32_t>(a != a);
    }
    const bool finite = nan == 0 && amax <= FLT_MAX;
    if (!finite || amax == 0.0f) {
      scale[i] = finite ? 0.0f : std::numeric_limits<float>::quiet_NaN();
      std::fill(q, q + cols, uint8_t{128});
      continue;
    }
    scale[i] = amax / 127.0f;
    const float inverse = 127.0f / amax;
#pragma omp simd
    for (int64_t j = 0; j < cols; ++j) {
      const float r = std::clamp(std::nearbyint(x[j] * inverse), -127.0f, 127.0f);
      q[j] = static_cast<uint8_t>(static_cast<int32_t>(r) + 128);
    }
  }
}

void dequantize_rows(const int32_t* acc, int64_t rows, int64_t cols, const float* row_scale, float alpha,
                     const float* col_scale, const int32_t* shift, const float* bias, float beta, float* c,
                     int64_t ldc) {
  for (int64_t i = 0; i < rows; ++i) {
    const float row = alpha * row_scale[i];
    const int32_t* ai = acc + i * cols;
    float* ci = c + i * ldc;
    if (bias && beta == 0.0f) {  // linear's output: the bias added here, not broadcast into c first
#pragma omp simd
      for (int64_t j = 0; j < cols; ++j) ci[j] = row * col_scale[j] * static_cast<float>(ai[j] - shift[j]) + bias[j];
    } else if (beta == 0.0f) {
#pragma omp simd
      for (int64_t j = 0; j < cols; ++j) ci[j] = row * col_scale[j] * static_cast<float>(ai[j] - shift[j]);
    } else {
#pragma omp simd
      for (int64_t j = 0; j < cols; ++j)
        ci[j] = row * col_scale[j] * static_cast<float>(ai[j] - shift[j]) + (bias ? bias[j] : 0.0f) + beta * ci[j];
    }
  }
}

}  // namespace attn::kernels::inline ATTN_ISA_NS
