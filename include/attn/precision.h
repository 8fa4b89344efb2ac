#pragma once
// The precision of the matrix products: fp32 (the default) or bf16.
//
// bf16: every kernels::gemm rounds its two inputs to bfloat16 and multiplies them through
// oneDNN's matmul, accumulating and writing in fp32 (C = alpha · op(A) op(B) + beta · C, C fp32).
// Nothing else changes: tensors, parameters (master weights), gradients, optimizer state,
// softmax and layer-norm statistics, and attn's own fused kernels (the SDPA tiles, the RNN
// cells) stay fp32, and checkpoints store fp32 whichever precision wrote or reads them.
//
// The setting is process-wide (the GEMMs run on OpenMP worker threads too), like the thread
// count; PrecisionScope sets it for a block and restores it. bf16 is refused, never emulated,
// on a CPU (or an ATTN_ISA level) without bf16 instructions.
#include <string>
#include <string_view>

#include "attn/cpu.h"

namespace attn {

enum class Precision { fp32, bf16 };

const char* precision_name(Precision p);  // "fp32", "bf16"
// "fp32" or "bf16"; anything else is a ValueError naming both.
Precision parse_precision(std::string_view name);

// What bf16 needs that this CPU, its operating system or the kernels' ISA level `level` lacks,
// as one phrase ("AVX512_BF16 or AMX-BF16 (this CPU: AVX-512 without BF16)"); "" when bf16 runs.
// bf16 needs AVX512_BF16 (with the AVX-512 level) or AMX-BF16 (with the OS's tile state).
std::string bf16_missing(const CpuFeatures& f, IsaLevel level);

// The GEMM precision now.
Precision compute_precision();
// Sets it for the process. bf16 on a machine where bf16_missing(read_cpu_features(), the
// ATTN_ISA level) is not "" throws ValueError: "bf16 needs ...".
void set_compute_precision(Precision p);

// Sets the precision for a scope, restoring the previous one at its end.
class PrecisionScope {
 public:
  explicit PrecisionScope(Precision p) : previous_(compute_precision()) { set_compute_precision(p); }
  ~PrecisionScope() { set_compute_precision(previous_); }
  PrecisionScope(const PrecisionScope&) = delete;
  PrecisionScope& operator=(const PrecisionScope&) = delete;

 private:
  Precision previous_;
};

}  // namespace attn
