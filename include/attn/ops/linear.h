#pragma once
// Linear layers and matrix products, all on kernels::gemm (OpenBLAS).
#include "attn/tensor.h"

namespace attn {

// y = x Wᵀ + b.
//   x      (..., IN)   any rank >= 1; the leading dimensions are flattened into the rows of
//                      one GEMM
//   weight (OUT, IN)   as torch.nn.Linear.weight
//   bias   (OUT)       optional (an undefined Tensor means no bias)
//   y      (..., OUT)
// Backward: dx += dy W, dW += dyᵀ x, db += Σ_rows dy.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

struct MatmulOptions {
  bool transpose_a = false;  // a is stored (K, M) (per batch item for bmm) and used as aᵀ
  bool transpose_b = false;  // b is stored (N, K) and used as bᵀ
};

// c (M, N) = op(a) (M, K) · op(b) (K, N), op(x) = x or xᵀ per MatmulOptions.
//   a (M, K), or (K, M) with transpose_a
//   b (K, N), or (N, K) with transpose_b
Tensor matmul(const Tensor& a, const Tensor& b, MatmulOptions options = {});

// Batched: c (B, M, N) = op(a[i]) · op(b[i]) for every i < B.
//   a (B, M, K), or (B, K, M) with transpose_a
//   b (B, K, N), or (B, N, K) with transpose_b
Tensor bmm(const Tensor& a, const Tensor& b, MatmulOptions options = {});

}  // namespace attn
