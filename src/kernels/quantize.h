#pragma once
// Dynamic int8 quantization of the activations for the int8 GEMM (attn/precision.h), and the
// dequantization of its sums: raw pointers, no checks.
#include <cstdint>

#include "kernels/isa.h"

namespace attn::kernels {

// Per row i of src (rows, cols) at row stride `ld`, symmetric s8 with one scale per row:
//   scale[i] = max_j |src[i, j]| / 127,  q[i, j] = round(src[i, j] · (127 / max_j |src[i, j]|)),
// rounded to nearest even, in [-127, 127], stored in dst (rows, cols) dense as the u8 q + 128
// (VPDPBUSD multiplies an unsigned by a signed byte; the GEMM subtracts 128 Σ_k w back).
// A row of zeros gets scale 0; a row holding NaN or inf gets scale NaN, so its output row is NaN.
ATTN_KERNEL(quantize_rows_u8,
            void(const float* src, int64_t ld, int64_t rows, int64_t cols, uint8_t* dst, float* scale));

// The int8 GEMM's output from its int32 sums acc (rows, cols) dense, per row i and column j:
//   c[i, j] = alpha · row_scale[i] · col_scale[j] · (acc[i, j] − shift[j]) + bias[j] + beta · c[i, j]
// bias (cols) may be null (no term); beta 0: c is only written. c at row stride ldc.
ATTN_KERNEL(dequantize_rows,
            void(const int32_t* acc, int64_t rows, int64_t cols, const float* row_scale, float alpha,
                 const float* col_scale, const int32_t* shift, const float* bias, float beta, float* c, int64_t ldc));

}  // namespace attn::kernels
