#pragma once
// The one doorway to BLAS. Row-major single-precision GEMM:
//   C (M, N) = alpha * op(A) (M, K) * op(B) (K, N) + beta * C
// with op(X) = X or Xᵀ. Leading dimensions are row strides in elements.
// BLAS threads follow attn::num_threads().
#include <cstdint>
#include <memory>
#include <string>

#include "attn/cpu.h"
#include "attn/parallel.h"

namespace attn::kernels {

// Under Precision::bf16 (attn/precision.h) it calls gemm_bf16. In fp32 it calls
// gemm_f32_onednn where use_onednn_f32 says so, else OpenBLAS.
void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// ---- fp32 through oneDNN (src/kernels/gemm_onednn.cpp) ----
// Whether kernels::gemm sends this fp32 product to oneDNN's matmul rather than OpenBLAS, as
// measured on both (docs/performance.md, "GEMM kernel selection"): never at the baseline ISA
// level, nor for products of fewer than 4 rows or 64³ multiply-adds (OpenBLAS's gemv and
// small kernels win there), nor with A transposed (the weight gradients dW = dYᵀ X: their
// sums over the batch rounded differently from OpenBLAS's enough to move 2-rank training
// 9e-5 away from 1-rank, tests/distributed); at avx2 only up to 512 rows; at avx512 always
// else. ATTN_FP32_GEMM=openblas keeps every product on OpenBLAS, =onednn sends every one
// that the level and layout allow to oneDNN (benchmarks, bisecting); any other value than
// those and "auto" is a ValueError on the first product.
bool use_onednn_f32(bool transpose_a, int64_t m, int64_t n, int64_t k);
// ATTN_FP32_GEMM, read once; kernel_isa_level() reads it at start, so that a bad value is one
// error line before any work (the CLI, the Python module and the test programs call that).
enum class Fp32Gemm { automatic, openblas, onednn };
Fp32Gemm fp32_gemm_choice();
// The same product as gemm, in fp32, by oneDNN's matmul reading A and B in place; k >= 1.
void gemm_f32_onednn(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                     int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
// A weight op(B) (K, N) copied once into the layout oneDNN's fp32 matmul reads fastest: the
// decoders' thin products (a few rows to a few hundred) ran 1.1-3× faster from it than from
// the weight as stored (docs/performance.md, "GEMM kernel selection").
struct PackedF32Weight;
std::shared_ptr<const PackedF32Weight> pack_f32_weight(bool transpose_b, int64_t k, int64_t n, const float* b,
                                                       int64_t ldb);
// C (M, N) = A (M, K) op(B) + beta C with op(B) packed by pack_f32_weight, or read from `b` as
// gemm_f32_onednn reads it where oneDNN chose another layout for this M.
void gemm_f32_packed(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const PackedF32Weight& packed,
                     bool transpose_b, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
// oneDNN's implementation of that product for dense operands ("brg:avx512_core").
std::string gemm_f32_implementation(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k);

// ---- bf16 (src/kernels/gemm_onednn.cpp) ----
// The same product with A and B rounded to bfloat16 (round to nearest even) and multiplied by
// oneDNN's matmul, accumulated and written in fp32; k >= 1. Only on a CPU where bf16 runs
// (attn::bf16_missing is ""): the precision setting checks that before any call comes here.
void gemm_bf16(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
// oneDNN's implementation of the op(A) (M, K) x op(B) (K, N) product ("brg:avx512_core_bf16");
// builds (and caches) its primitive.
std::string gemm_bf16_implementation(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k);
// The oneDNN library's version, "2.6.3".
std::string onednn_version();
// Primitives in the fp32 and bf16 shape cache now.
size_t onednn_cached_primitives();

// Called when the thread count changed (attn/parallel.h).
using attn::prepare_blas_threads;

// Batched GEMM over `batch` independent products, each operand advancing by its stride
// (in elements) from one product to the next.
void gemm_batched(bool transpose_a, bool transpose_b, int64_t batch, int64_t m, int64_t n, int64_t k, float alpha,
                  const float* a, int64_t lda, int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b,
                  float beta, float* c, int64_t ldc, int64_t stride_c);

// ---- Which OpenBLAS kernels run (OpenBLAS "core types") ----------------------------------------
// Debian's OpenBLAS 0.3.21 picks its kernels from a table of CPU models; a model it does not
// know (a newer Xeon) gets the generic SSE3 "Prescott" kernels, 4-5x slower. attn picks from
// the CPU's features instead, and re-initialises OpenBLAS with that core when OpenBLAS's own
// pick is below it, at load time. A user's OPENBLAS_CORETYPE always wins.

// The best OpenBLAS 0.3.21 core whose kernels the CPU can run; "" when not x86.
// Features only, never the model number: a future CPU gets the best its features allow.
const char* blas_core_for(const CpuFeatures& cpu);
// The vector ISA an OpenBLAS core name's kernels use, as a rank (case-insensitive):
// 0 SSE2, 1 SSE3, 2 SSSE3, 3 SSE4, 4 AVX, 5 AVX2, 6 AVX-512, 7 AVX-512 BF16, 8 AMX; -1 unknown.
int blas_core_level(const std::string& core);
// The highest of those ranks whose instructions this CPU (and its OS) can run; -1 not x86.
// blas_core_for may pick a lower-ranked core that measured faster (Core2 for SSE4).
int blas_cpu_level(const CpuFeatures& cpu);
// Whether attn should replace OpenBLAS's pick `detected` by `best`: never when the user set
// OPENBLAS_CORETYPE (user_coretype non-null), nor for a pick attn does not know (a newer
// OpenBLAS may know better), else when `detected` ranks below `best`.
bool blas_core_should_switch(const char* user_coretype, const std::string& detected, const std::string& best);

struct BlasCoreState {
  std::string library;            // "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..." (openblas_get_config)
  std::string detected;           // OpenBLAS's pick when it loaded (from its model table or OPENBLAS_CORETYPE)
  std::string best;               // blas_core_for(this CPU)
  int cpu_level = -1;             // blas_cpu_level(this CPU)
  std::string active;             // the kernels in use now (openblas_get_corename)
  bool user_set = false;          // OPENBLAS_CORETYPE was set when attn loaded
  std::string user_value;         // its value
  bool user_value_known = false;  // it names a core this OpenBLAS has
  bool switched = false;          // attn re-initialised OpenBLAS with `best`
  std::string switch_error;       // why attn could not switch (no DYNAMIC_ARCH OpenBLAS), else ""
};
// Applies the choice on the first call (done at load time by a static initialiser) and
// returns what happened.
const BlasCoreState& blas_core_state();

}  // namespace attn::kernels
