#pragma once
// The precision of the matrix products: fp32 (the default), bf16, or int8 (inference only).
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
//
// int8 (inference): the GEMMs whose B operand is a weight (linear, the RNN cells' input and
// hidden products, the attention scores' projections) multiply s8 weights, quantized once per
// output channel, by the activations quantized per row at each call, in s32 through oneDNN's
// matmul, dequantized to fp32 (kernels/gemm_int8.h). Every other product and kernel stays fp32.
// A weight holding NaN or inf, or one whose gradient is asked for, is refused (ValueError).
// Refused, never emulated, on a CPU (or an ATTN_ISA level) without VNNI or AMX-INT8.
#include <cstdint>
#include <string>
#include <string_view>

#include "attn/cpu.h"

namespace attn {

enum class Precision { fp32, bf16, int8 };

const char* precision_name(Precision p);  // "fp32", "bf16", "int8"
// "fp32", "bf16" or "int8"; anything else is a ValueError naming them.
Precision parse_precision(std::string_view name);

// What bf16 needs that this CPU, its operating system or the kernels' ISA level `level` lacks,
// as one phrase ("AVX512_BF16 or AMX-BF16 (this CPU: AVX-512 without BF16)"); "" when bf16 runs.
// bf16 needs AVX512_BF16 (with the AVX-512 level) or AMX-BF16 (with the OS's tile state).
std::string bf16_missing(const CpuFeatures& f, IsaLevel level);
// The same for int8: it needs AVX512_VNNI (with the avx512 level), AVX-VNNI (avx2 or above) or
// AMX-INT8 (avx512, with the OS's tile state). Without VNNI oneDNN's int8 kernels sum u8 x s8
// pairs in saturating s16 (VPMADDUBSW), which 8-bit activations overflow: refused, not run.
std::string int8_missing(const CpuFeatures& f, IsaLevel level);

// The GEMM precision now.
Precision compute_precision();
// Sets it for the process. bf16 on a machine where bf16_missing(read_cpu_features(), the
// ATTN_ISA level) is not "" throws ValueError: "bf16 needs ..."; int8 likewise.
void set_compute_precision(Precision p);
// Counts the switches into int8 from another precision: the int8 weights quantized before the
// current switch are quantized again (the weights may have changed at the other precision).
uint64_t int8_epoch();

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
