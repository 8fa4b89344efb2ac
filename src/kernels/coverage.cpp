#include "kernels/coverage.h"

#include <algorithm>

#include "attn/parallel.h"

namespace attn::kernels {
namespace {
// Rows per chunk: enough work per thread to pay for the fork.
int64_t row_grain(int64_t width) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, width)); }
}  // namespace

void add_outer_forward(const float* x, const float* c, const float* w, float* y, int64_t R, int64_t A) {
  parallel_for(0, R, row_grain(A), [=](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float cr = c[r];
      for (int64_t a = 0; a < A; ++a) y[r * A + a] = x[r * A + a] + cr * w[a];
    }
  });
}

void add_outer_backward_rows(const float* dy, const float* w, float* dx, float* dc, int64_t R, int64_t A) {
  parallel_for(0, R, row_grain(A), [=](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* g = dy + r * A;
      if (dx)
        for (int64_t a = 0; a < A; ++a) dx[r * A + a] += g[a];  // dx += dy
      if (dc) {
        double s = 0.0;  // dc[r] += Σ_a dy[r, a] w[a]
        for (int64_t a = 0; a < A; ++a) s += static_cast<double>(g[a]) * w[a];
        dc[r] += static_cast<float>(s);
      }
    }
  });
}

void add_outer_backward_w(const float* dy, const float* c, float* dw, int64_t R, int64_t A) {
  parallel_for(0, A, row_grain(R), [=](int64_t lo, int64_t hi) {
    for (int64_t a = lo; a < hi; ++a) {
      double s = 0.0;  // dw[a] += Σ_r dy[r, a] c[r]
      for (int64_t r = 0; r < R; ++r) s += static_cast<double>(dy[r * A + a]) * c[r];
      dw[a] += static_cast<float>(s);
    }
  });
}

void min_sum_forward(const float* a, const float* c, float* y, int64_t B, int64_t S) {
  parallel_for(0, B, row_grain(S), [=](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      double s = 0.0;
      for (int64_t i = b * S; i < (b + 1) * S; ++i) s += std::min(a[i], c[i]);
      y[b] = static_cast<float>(s);
    }
  });
}

void min_sum_backward(const float* a, const float* c, const float* dy, float* da, float* dc, int64_t B, int64_t S) {
  parallel_for(0, B, row_grain(S), [=](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      const float g = dy[b];
      for (int64_t i = b * S; i < (b + 1) * S; ++i) {
        const float share_a = a[i] < c[i] ? 1.0f : a[i] == c[i] ? 0.5f : 0.0f;  // d min / da
        if (da) da[i] += g * share_a;
        if (dc) dc[i] += g * (1.0f - share_a);
      }
    }
  });
}

}  // namespace attn::kernels
