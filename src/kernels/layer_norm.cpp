#include "kernels/layer_norm.h"

#include <cmath>

#include "attn/parallel.h"

namespace attn::kernels::inline ATTN_ISA_NS {
namespace {
int64_t row_grain(int64_t d) { return d >= 16384 ? 1 : 16384 / (d < 1 ? 1 : d); }
}  // namespace

void layer_norm_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                        int64_t rows, int64_t d, float eps) {
  const float inv_d = 1.0f / static_cast<float>(d);
  parallel_for(0, rows, row_grain(d), [=](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* xr = x + r * d;
      float* yr = y + r * d;
      // Centred through the row's first value x₀: c = (x − x₀) − Σ(x − x₀)/D. With a large
      // common offset (x ≈ 1e3 ± 1) x − x₀ is exact and the small mean offset keeps its low
      // bits, where x − mean with mean rounded to float would lose ~ulp(1e3).
      const float shift = xr[0];
      float s = 0.0f;
#pragma omp simd reduction(+ : s)
      for (int64_t j = 0; j < d; ++j) s += xr[j] - shift;
      const float mu_off = s * inv_d;
      float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
      for (int64_t j = 0; j < d; ++j) ss += ((xr[j] - shift) - mu_off) * ((xr[j] - shift) - mu_off);
      const float rs = 1.0f / std::sqrt(ss * inv_d + eps);
      mean[r] = shift + mu_off;
      rstd[r] = rs;
      if (gamma && beta) {
#pragma omp simd
        for (int64_t j = 0; j < d; ++j) yr[j] = ((xr[j] - shift) - mu_off) * rs * gamma[j] + beta[j];
      } else if (gamma) {
#pragma omp simd
        for (int64_t j = 0; j < d; ++j) yr[j] = ((xr[j] - shift) - mu_off) * rs * gamma[j];
      } else if (beta) {
#pragma omp simd
        for (int64_t j = 0; j < d; ++j) yr[j] = ((xr[j] - shift) - mu_off) * rs + beta[j];
      } else {
#pragma omp simd
        for (int64_t j = 0; j < d; ++j) yr[j] = ((xr[j] - shift) - mu_off) * rs;
      }
    }
  });
}

void layer_norm_backward_input(const float* x, const float* gamma, const float* mean, const float* rstd,
                               const float* dy, float* dx, int64_t rows, int64_t d) {
  // dx += rstd · (g − mean(g) − x̂ · mean(g ⊙ x̂)), g = dy ⊙ γ
  const float inv_d = 1.0f / static_cast<float>(d);
  parallel_for(0, rows, row_grain(d), [=](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* xr = x + r * d;
      const float* dyr = dy + r * d;
      float* dxr = dx + r * d;
      const float mu = mean[r];
      const float rs = rstd[r];
      float sg = 0.0f;
      float sgx = 0.0f;
      if (gamma) {
#pragma omp simd reduction(+ : sg, sgx)
        for (int64_t j = 0; j < d; ++j) {
          const float g = dyr[j] * gamma[j];
          sg += g;
          sgx += g * (xr[j] - mu) * rs;
        }
      } else {
#pragma omp simd reduction(+ : sg, sgx)
        for (int64_t j = 0; j < d; ++j) {
          sg += dyr[j];
          sgx += dyr[j] * (xr[j] - mu) * rs;
        }
      }
      const float a = sg * inv_d;
      const float b = sgx * inv_d;
      if (gamma) {
#pragma omp simd
        for (int64_t j = 0; j < d; ++j) dxr[j] += rs * (dyr[j] * gamma[j] - a - (xr[j] - mu) * rs * b);
      } else {
#pragma omp simd
        for (int64_t j = 0; j < d; ++j) dxr[j] += rs * (dyr[j] - a - (xr[j] - mu) * rs * b);
      }
    }
  });
}

void layer_norm_backward_params(const float* x, const float* mean, const float* rstd, const float* dy, float* dgamma,
                                float* dbeta, int64_t rows, int64_t d, float* scratch) {
  // dγ += Σ_r dy ⊙ x̂, dβ += Σ_r dy
  const int64_t blocks = layer_norm_param_blocks(rows);
  float* pg = scratch;               // (blocks, D) partial dγ
  float* pb = scratch + blocks * d;  // (blocks, D) partial dβ
  // Each block sums its rows in row order; blocks are fixed by `rows` alone.
  const int64_t block_grain = row_grain(d * kLayerNormParamBlock);
  parallel_for(0, blocks, block_grain, [=](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      float* g = pg + b * d;
      float* s = pb + b * d;
      for (int64_t j = 0; j < d; ++j) g[j] = s[j] = 0.0f;
      const int64_t r_end = (b + 1) * kLayerNormParamBlock < rows ? (b + 1) * kLayerNormParamBlock : rows;
      for (int64_t r = b * kLayerNormParamBlock; r < r_end; ++r) {
        const float* xr = x + r * d;
        const float* dyr = dy + r * d;
        const float mu = mean[r];
        const float rs = rstd[r];
#pragma omp simd
        for (int64_t j = 0; j < d; ++j) {
          g[j] += dyr[j] * ((xr[j] - mu) * rs);
          s[j] += dyr[j];
        }
      }
    }
  });
  // Merge partials in block order, threaded over columns.
  parallel_for(0, d, 256, [=](int64_t lo, int64_t hi) {
    for (int64_t b = 0; b < blocks; ++b) {
      if (dgamma)
        for (int64_t j = lo; j < hi; ++j) dgamma[j] += pg[b * d + j];
      if (dbeta)
        for (int64_t j = lo; j < hi; ++j) dbeta[j] += pb[b * d + j];
    }
  });
}

}  // namespace attn::kernels::inline ATTN_ISA_NS
