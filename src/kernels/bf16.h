#pragma once
// fp32 -> bfloat16 conversion for the bf16 GEMM path (attn/precision.h): raw pointers, no checks.
#include <cstdint>

#include "kernels/isa.h"

namespace attn::kernels {

// dst (rows, cols), row-major and dense, = bf16(src), src (rows, cols) at row stride `ld`.
// Round to nearest even, as the AVX512_BF16 instructions (VCVTNEPS2BF16) do; a NaN stays a
// quiet NaN.
ATTN_KERNEL(convert_to_bf16, void(const float* src, int64_t ld, int64_t rows, int64_t cols, uint16_t* dst));

}  // namespace attn::kernels
