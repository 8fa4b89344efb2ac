#include "attn/ops/gemm.h"

#include "kernels/blas.h"

namespace attn {

void blas_gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  kernels::gemm(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

std::string gemm_bf16_implementation(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k) {
  return kernels::gemm_bf16_implementation(transpose_a, transpose_b, m, n, k);
}

}  // namespace attn
