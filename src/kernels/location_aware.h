#pragma once
// CPU kernels of Chorowski et al.'s location-aware attention (attn/ops/attention.h,
// location_aware_features): the im2col of a 1-D convolution of the previous alignment, so that
// the convolution itself is one GEMM. Raw pointers and sizes, no checks, no allocation; the
// backward accumulates (+=).
//
// Width r is odd, centred, zero padded: window j of position s reads position s + j − r/2.
#include <cstdint>

namespace attn::kernels {

// cols[b, s, j] = prev[b, s + j − r/2], 0 where that falls outside [0, S).
// prev (B, S), cols (B, S, r).
void location_windows_forward(const float* prev, int64_t B, int64_t S, int64_t r, float* cols);
// The transpose (col2im): dprev[b, i] += Σ_{s, j : s + j − r/2 = i} dcols[b, s, j].
void location_windows_backward(const float* dcols, int64_t B, int64_t S, int64_t r, float* dprev);

}  // namespace attn::kernels
