#pragma once
// CPU kernels of the linear / matmul family beyond GEMM (which comes from kernels/blas.h):
// raw pointers and sizes, no checks, no allocation.
#include <cstdint>

namespace attn::kernels {

// y[r, :] = row for every r: the bias written into each row before GEMM adds x Wᵀ.
// row (n), y (rows, n).
void broadcast_rows(const float* row, float* y, int64_t rows, int64_t n);

}  // namespace attn::kernels
