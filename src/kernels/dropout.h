#pragma once
// Inverted-dropout CPU kernels: raw pointers and sizes, no checks, no allocation. The
// backward kernel accumulates (+=) into the input gradient.
//
// Element i is kept when attn::uniform_at(seed, i) >= p (probability 1 − p), so the mask
// depends only on (seed, flat index): deterministic and independent of the thread count,
// and the backward regenerates it instead of storing it.
#include <cstdint>

#include "attn/random.h"

namespace attn::kernels {

inline bool dropout_keep(uint64_t seed, uint64_t index, float p) { return uniform_at(seed, index) >= p; }

// y = keep ? x / (1 − p) : 0                                                      // (n)
void dropout_forward(const float* x, float* y, int64_t n, float p, uint64_t seed);
// dx += keep ? dy / (1 − p) : 0
void dropout_backward(const float* dy, float* dx, int64_t n, float p, uint64_t seed);

}  // namespace attn::kernels
