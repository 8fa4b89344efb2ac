#pragma once
// The library's matrix product on raw row-major float arrays, for benchmarks (attn bench gemm)
// that time it without tensors: kernels::gemm, at the process's compute precision
// (attn/precision.h). C (M, N) = alpha · op(A) (M, K) · op(B) (K, N) + beta · C, leading
// dimensions in elements. No checks: the caller passes consistent sizes.
#include <cstdint>
#include <string>

namespace attn {

void blas_gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
// oneDNN's implementation of the bf16 (M, K) x (K, N) product ("brg:avx512_core_bf16"); builds
// (and caches) its primitive. Only where bf16 runs (attn::bf16_missing is "").
std::string gemm_bf16_implementation(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k);

namespace ops {

// While one lives on this thread, the caller promises that no parameter changes: the decoders
// (greedy, beam) hold one. The fp32 weight products (weight_gemm: Linear, the RNN cells, the
// attention projections) then read each weight, from its second use on, from a copy packed
// for oneDNN's matmul (kernels::pack_f32_weight); the copies are dropped when the outermost
// FrozenWeights of the thread ends. Nestable; not copyable.
class FrozenWeights {
 public:
  FrozenWeights();
  ~FrozenWeights();
  FrozenWeights(const FrozenWeights&) = delete;
  FrozenWeights& operator=(const FrozenWeights&) = delete;
};

}  // namespace ops

}  // namespace attn
