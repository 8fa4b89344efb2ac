#include "attn/kernels/blas.h"

#include <cblas.h>

#include <algorithm>

#include "attn/parallel.h"

namespace attn::kernels {

void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
          const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    // BLAS leaves C untouched only for beta == 1; make k == 0 mean C = beta * C.
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    return;
  }
  cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
              static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

void gemm_batched(bool transpose_a, bool transpose_b, int64_t batch, int64_t m, int64_t n, int64_t k,
                  float alpha, const float* a, int64_t lda, int64_t stride_a, const float* b, int64_t ldb,
                  int64_t stride_b, float beta, float* c, int64_t ldc, int64_t stride_c) {
  // Small products: one BLAS call per thread-chunk of the batch (BLAS runs single-threaded
  // inside our parallel region). Large products: let BLAS thread each one.
  const int64_t work = m * n * k;
  const bool small = work < 64 * 64 * 64;
  if (small && batch > 1) {
    // A chunk gets at least ~32k multiply-adds, so tiny batches do not pay for a team.
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(work, 1));
    parallel_for(0, batch, grain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        gemm(transpose_a, transpose_b, m, n, k, alpha, a + i * stride_a, lda, b + i * stride_b, ldb, beta,
             c + i * stride_c, ldc);
    });
  } else {
    for (int64_t i = 0; i < batch; ++i)
      gemm(transpose_a, transpose_b, m, n, k, alpha, a + i * stride_a, lda, b + i * stride_b, ldb, beta,
           c + i * stride_c, ldc);
  }
}

void blas_set_num_threads(int n) { openblas_set_num_threads(n); }

}  // namespace attn::kernels
