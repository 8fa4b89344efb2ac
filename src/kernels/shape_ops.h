#pragma once
// Copy kernels for concat / split / stack / transpose: raw pointers and sizes, no checks,
// no allocation. *_add kernels accumulate (+=).
#include <cstdint>

namespace attn::kernels {

// dst[r, 0:width] = src[r, 0:width] for r < rows; rows are `src_stride` / `dst_stride`
// elements apart. Concat writes each part into a column band of the output; split reads
// a band of the input.
void copy_2d(const float* src, int64_t src_stride, float* dst, int64_t dst_stride, int64_t rows, int64_t width);
// dst[r, 0:width] += src[r, 0:width] (the backward of copy_2d with the roles swapped).
void add_2d(const float* src, int64_t src_stride, float* dst, int64_t dst_stride, int64_t rows, int64_t width);

// y (batch, n, m) = x (batch, m, n) with the last two dimensions swapped.
void transpose_last2_forward(const float* x, float* y, int64_t batch, int64_t m, int64_t n);
// dx (batch, m, n) += dyᵀ for dy (batch, n, m): the transpose of a transpose.
void transpose_last2_backward(const float* dy, float* dx, int64_t batch, int64_t m, int64_t n);

}  // namespace attn::kernels
