#pragma once
// Reduction kernels with a fixed summation order: raw pointers and sizes, no checks, no
// allocation. Sums accumulate in double over fixed chunks (kSumChunk elements, eight
// interleaved lanes inside a chunk) combined in chunk order, so the result does not
// depend on the thread count. Backward kernels accumulate (+=).
#include <cstdint>

namespace attn::kernels {

constexpr int64_t kSumChunk = 16384;
// Number of doubles of scratch sum_all needs for n elements.
inline int64_t sum_all_partials(int64_t n) { return (n + kSumChunk - 1) / kSumChunk; }

// Σ_i x[i] in double; `partials` holds sum_all_partials(n) doubles of scratch.
double sum_all(const float* x, int64_t n, double* partials);
// dx[i] += value for i < n (the backward of a full sum, value = dy or dy / n).
void add_scalar_into(float* dx, float value, int64_t n);

// y[r] = scale * Σ_j x[r, j]; x (rows, n), y (rows).
void sum_rows_forward(const float* x, float* y, int64_t rows, int64_t n, double scale);
// dx[r, j] += scale * dy[r].
void sum_rows_backward(const float* dy, float* dx, int64_t rows, int64_t n, float scale);

// out[j] += Σ_r x[r, j] for x (rows, n): the column sums, as bias gradients need them. Each
// column is summed in row order by one chunk (chunks own column ranges), in float, so the
// result does not depend on the thread count.
void sum_columns_into(const float* x, int64_t rows, int64_t n, float* out);

}  // namespace attn::kernels
