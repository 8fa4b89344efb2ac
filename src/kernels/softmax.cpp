#include "kernels/softmax.h"

#include <cmath>

#include "attn/parallel.h"
#include "kernels/normalizer.h"
#include "row_exp.h"

namespace attn::kernels::inline ATTN_ISA_NS {

float logsumexp_row(const float* x, const int32_t* mask_or_null, int64_t n) {
  const float m = row_max<false>(x, mask_or_null, 1.0f, n);
  if (m == kRowNegInf) return kRowNegInf;
  return m + std::log(exp_shifted<false>(x, mask_or_null, 1.0f, m, nullptr, n));
}

void log_softmax_row_forward(const float* x, const int32_t* mask_or_null, float* y, int64_t n) {
  const float m = row_max<false>(x, mask_or_null, 1.0f, n);
  if (m == kRowNegInf) {
    fill_zero(y, n);
    return;
  }
  const float log_s = std::log(exp_shifted<false>(x, mask_or_null, 1.0f, m, nullptr, n));
  if (mask_or_null) {
    const int32_t* mask = mask_or_null;
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      const float v = (x[i] - m) - log_s;
      y[i] = mask[i] != 0 ? v : 0.0f;
    }
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - log_s;
  }
}

void log_softmax_row_backward(const float* y, const int32_t* mask_or_null, const float* dy, float* dx, int64_t n) {
  // dx += dy − softmax ⊙ Σ dy, with softmax = exp(y), sums and updates over kept positions
  float s = 0.0f;
  if (mask_or_null) {
    const int32_t* mask = mask_or_null;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; ++i) {
      const float g = dy[i];
      s += mask[i] != 0 ? g : 0.0f;
    }
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      const float g = dy[i] - fast_exp(y[i]) * s;
      dx[i] += mask[i] != 0 ? g : 0.0f;
    }
  } else {
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; ++i) s += dy[i];
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) dx[i] += dy[i] - fast_exp(y[i]) * s;
  }
}

void softmax_forward(const float* x, const int32_t* mask_or_null, float* y, int64_t rows, int64_t n) {
  normalizer_forward(Normalizer{}, NormalizerRows{.rows = rows, .n = n, .mask = mask_or_null}, x, y);
}

void softmax_backward(const float* y, const float* dy, float* dx, int64_t rows, int64_t n) {
  normalizer_backward(Normalizer{}, NormalizerRows{.rows = rows, .n = n}, nullptr, y, dy, dx);
}

void log_softmax_forward(const float* x, const int32_t* mask_or_null, float* y, int64_t rows, int64_t n) {
  parallel_for(0, rows, row_grain(n), [=](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r)
      log_softmax_row_forward(x + r * n, mask_or_null ? mask_or_null + r * n : nullptr, y + r * n, n);
  });
}

void log_softmax_backward(const float* y, const int32_t* mask_or_null, const float* dy, float* dx, int64_t rows,
                          int64_t n) {
  parallel_for(0, rows, row_grain(n), [=](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r)
      log_softmax_row_backward(y + r * n, mask_or_null ? mask_or_null + r * n : nullptr, dy + r * n, dx + r * n, n);
  });
}

}  // namespace attn::kernels::inline ATTN_ISA_NS
