#pragma once
// Masked pooling over time: raw pointers and sizes, no checks, no allocation. Rows are
// independent (threaded over the batch); each output element is computed by one thread
// in a fixed order. Backward kernels accumulate (+=).
//   x (B, S, E) float32, lengths (B) int32 in [0, S]; L_b = lengths[b]
#include <cstdint>

namespace attn::kernels {

// y[b, e] = max_{s < L_b} x[b, s, e]; argmax[b, e] = the first s reaching it.
// L_b == 0: y = 0, argmax = -1.
void masked_max_time_forward(const float* x, const int32_t* lengths, float* y, int32_t* argmax, int64_t B, int64_t S,
                             int64_t E);
// dx[b, argmax[b, e], e] += dy[b, e] (nothing where argmax is -1).
void masked_max_time_backward(const float* dy, const int32_t* argmax, float* dx, int64_t B, int64_t S, int64_t E);

// y[b, e] = (1 / L_b) Σ_{s < L_b} x[b, s, e], summed in ascending s; L_b == 0: y = 0.
void masked_mean_time_forward(const float* x, const int32_t* lengths, float* y, int64_t B, int64_t S, int64_t E);
// dx[b, s, e] += dy[b, e] / L_b for s < L_b.
void masked_mean_time_backward(const float* dy, const int32_t* lengths, float* dx, int64_t B, int64_t S, int64_t E);

}  // namespace attn::kernels
