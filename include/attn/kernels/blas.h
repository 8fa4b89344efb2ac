#pragma once
// The one doorway to BLAS. Row-major single-precision GEMM:
//   C (M, N) = alpha * op(A) (M, K) * op(B) (K, N) + beta * C
// with op(X) = X or Xᵀ. Leading dimensions are row strides in elements.
#include <cstdint>

namespace attn::kernels {

void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
          const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// Batched GEMM over `batch` independent products, each operand advancing by its stride
// (in elements) from one product to the next.
void gemm_batched(bool transpose_a, bool transpose_b, int64_t batch, int64_t m, int64_t n, int64_t k,
                  float alpha, const float* a, int64_t lda, int64_t stride_a, const float* b, int64_t ldb,
                  int64_t stride_b, float beta, float* c, int64_t ldc, int64_t stride_c);

void blas_set_num_threads(int n);

}  // namespace attn::kernels
