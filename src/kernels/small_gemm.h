#pragma once
// GEMM for products with few rows (a decoder or recurrent step: M = the batch), written by
// hand so that nothing is packed. OpenBLAS packs both operands on every call; at M = 64 a
// step's weights are packed again for each of the 41 steps, and that packing was 15 % of a
// Bahdanau training step (docs/performance.md). Internal to kernels::gemm.
#include <cstdint>

namespace attn::kernels {

// C (m, n) = alpha · A (m, k) · op(B) + beta · C, A row-major (lda), op(B) = B (k, n) or
// Bᵀ with B (n, k) row-major (ldb). Returns false, touching nothing, when the product is not
// one it handles (the build lacks AVX-512, or m is too large); the caller then uses BLAS.
// Each element of C is summed over k in order by one thread, so results do not depend on
// the thread count. beta == 0 never reads C.
bool small_gemm(bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// The largest m that small_gemm takes.
inline constexpr int64_t kSmallGemmMaxRows = 128;

}  // namespace attn::kernels
