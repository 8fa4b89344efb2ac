#pragma once
// Private to src/ops/: the GEMMs whose B operand is a weight, the ones --precision int8
// quantizes (attn/precision.h, docs/precision.md).
#include <cstdint>

#include "attn/tensor.h"

namespace attn::detail {

// C (M, N) = A (M, K) op(B) (K, N) + bias (N, added to each row; null: none), where B lies
// inside `weight` (a parameter) at `b`, stored (N, K) at row stride ldb when transpose_b, else
// (K, N); C at row stride ldc (ldc == N when there is a bias). At fp32 and bf16 this is
// kernels::gemm over C preset to the bias. At int8 it is kernels::gemm_int8, which adds the bias
// as it dequantizes, with op(B) quantized once per (weight, layout) and int8 epoch; a weight
// holding NaN or inf, or one whose gradient is being recorded, is refused with ValueError naming
// `op` and the weight.
void weight_gemm(const char* op, const Tensor& weight, bool transpose_b, int64_t m, int64_t n, int64_t k,
                 const float* a, int64_t lda, const float* b, int64_t ldb, const float* bias, float* c, int64_t ldc);

}  // namespace attn::detail
