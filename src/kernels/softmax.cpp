#include "kernels/softmax.h"

#include <bit>
#include <cmath>
#include <limits>

#include "attn/parallel.h"

namespace attn::kernels::inline ATTN_ISA_NS {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int32_t kNegInfBits = std::bit_cast<int32_t>(kNegInf);

// Rows per chunk: about 16K elements of work per chunk.
int64_t row_grain(int64_t n) { return n >= 16384 ? 1 : 16384 / (n < 1 ? 1 : n); }

// Max over the kept positions; -inf when none is kept.
float row_max(const float* x, const int32_t* mask, int64_t n) {
  float m = kNegInf;
  if (mask) {
#pragma omp simd reduction(max : m)
    for (int64_t i = 0; i < n; ++i) {
      // masked entries read as -inf through a bit select (branch-free; x may be NaN there)
      const int32_t keep = -static_cast<int32_t>(mask[i] != 0);
      const float xi = std::bit_cast<float>((std::bit_cast<int32_t>(x[i]) & keep) | (kNegInfBits & ~keep));
      m = xi > m ? xi : m;
    }
  } else {
#pragma omp simd reduction(max : m)
    for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  }
  return m;
}

// e[i] = exp(x[i] − m) on kept positions, 0 elsewhere; returns Σ e. e may be null (sum only).
float exp_shifted(const float* x, const int32_t* mask, float m, float* e, int64_t n) {
  float s = 0.0f;
  if (mask && e) {
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; ++i) {
      float v = fast_exp(x[i] - m);
      v = mask[i] != 0 ? v : 0.0f;
      e[i] = v;
      s += v;
    }
  } else if (mask) {
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; ++i) {
      const float v = fast_exp(x[i] - m);
      s += mask[i] != 0 ? v : 0.0f;
    }
  } else if (e) {
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; ++i) {
      const float v = fast_exp(x[i] - m);
      e[i] = v;
      s += v;
    }
  } else {
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; ++i) s += fast_exp(x[i] - m);
  }
  return s;
}

void fill_zero(float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = 0.0f;
}

}  // namespace

float logsumexp_row(const float* x, const int32_t* mask_or_null, int64_t n) {
  const float m = row_max(x, mask_or_null, n);
  if (m == kNegInf) return kNegInf;
  return m + std::log(exp_shifted(x, mask_or_null, m, nullptr, n));
}

void softmax_row_forward(const float* x, const int32_t* mask_or_null, float* y, int64_t n) {
  const float m = row_max(x, mask_or_null, n);
  if (m == kNegInf) {  // fully masked (or all kept entries -inf): all zeros
    fill_zero(y, n);
    return;
  }
  // s >= 1: the max position contributes exp(0) = 1.
  const float inv = 1.0f / exp_shifted(x, mask_or_null, m, y, n);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] *= inv;
}

void softmax_row_backward(const float* y, const float* dy, float* dx, int64_t n) {
  // dx += y ⊙ (dy − Σ dy⊙y)
  float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
  for (int64_t i = 0; i < n; ++i) dot += dy[i] * y[i];
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) dx[i] += y[i] * (dy[i] - dot);
}

void log_softmax_row_forward(const float* x, const int32_t* mask_or_null, float* y, int64_t n) {
  const float m = row_max(x, mask_or_null, n);
  if (m == kNegInf) {
    fill_zero(y, n);
    return;
  }
  const float log_s = std::log(exp_shifted(x, mask_or_null, m, nullptr, n));
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
  parallel_for(0, rows, row_grain(n), [=](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) softmax_row_forward(x + r * n, mask_or_null ? mask_or_null + r * n : nullptr, y + r * n, n);
  });
}

void softmax_backward(const float* y, const float* dy, float* dx, int64_t rows, int64_t n) {
  parallel_for(0, rows, row_grain(n), [=](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) softmax_row_backward(y + r * n, dy + r * n, dx + r * n, n);
  });
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

}  // namespace attn::kernels::ATTN_ISA_NS
