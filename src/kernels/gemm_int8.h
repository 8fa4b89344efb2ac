#pragma once
// The int8 GEMM of --precision int8 (attn/precision.h, docs/precision.md): a weight quantized
// once per output channel, the activations quantized per row at each call, u8 x s8 products
// summed in s32 by oneDNN's matmul, dequantized into fp32. Raw pointers, no checks.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace attn::kernels {

struct Int8Packs;  // oneDNN's reordered copies of one weight (gemm_int8.cpp)

// op(B) (K, N) of a GEMM, quantized per output channel n (symmetric s8):
//   scale[n] = max_k |op(B)[k, n]| / 127,  q[n, k] = round(op(B)[k, n] · (127 / max_k |op(B)[k, n]|))
// rounded to nearest even; a channel of zeros gets scale 0 and zeros.
struct Int8Weight {
  int64_t k = 0, n = 0;
  std::vector<int8_t> q;       // (N, K) dense, one row per output channel
  std::vector<float> scale;    // (N)
  std::vector<int32_t> shift;  // (N): 128 Σ_k q[n, k], the share of the activations' +128
  bool finite = true;          // false: op(B) held NaN or inf (q and scale are then meaningless)
  std::shared_ptr<Int8Packs> packs;
};

// op(B) = B (K, N) stored at row stride ldb, or, when transpose_b, Bᵀ with B (N, K) at ldb.
std::shared_ptr<const Int8Weight> quantize_weight_int8(bool transpose_b, int64_t k, int64_t n, const float* b,
                                                       int64_t ldb);

// C (M, N) = alpha · dequant(quant(A) (M, K) · W (K, N)) + bias + beta · C, A (M, K) at lda, C at ldc:
//   C[i, n] = alpha · sa[i] · w.scale[n] · (Σ_k (qa[i, k] + 128) q[n, k] − w.shift[n]) + bias[n] + beta · C[i, n]
// with qa, sa from quantize_rows_u8 (kernels/quantize.h); bias (N) may be null; k >= 1. Only
// where int8 runs (attn::int8_missing is ""): the precision setting checks that before any
// call comes here.
void gemm_int8(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const Int8Weight& w,
               float beta, float* c, int64_t ldc, const float* bias = nullptr);

// oneDNN's implementation of the u8 (M, K) x s8 (K, N) product ("brg:avx512_core_vnni").
std::string gemm_int8_implementation(int64_t m, int64_t n, int64_t k);

}  // namespace attn::kernels
