#pragma once
// Inverted-dropout CPU kernels: raw pointers and sizes, no checks, no allocation. The
// backward kernel accumulates (+=) into the input gradient.
//
// Element i is kept when attn::uniform_at(seed, i) >= p (probability 1 − p), so the mask
// depends only on (seed, flat index): deterministic and independent of the thread count,
// and the backward regenerates it instead of storing it. The hash is integer arithmetic, so
// every ISA level draws the same mask (AVX-512 runs its 64-bit products as VPMULLQ).
#include <cstdint>

#include "attn/random.h"
#include "kernels/isa.h"

namespace attn::kernels {

inline namespace ATTN_ISA_NS {
inline bool dropout_keep(uint64_t seed, uint64_t index, float p) { return uniform_at(seed, index) >= p; }
}  // namespace ATTN_ISA_NS

// y = keep ? x / (1 − p) : 0                                                      // (n)
ATTN_KERNEL(dropout_forward, void(const float* x, float* y, int64_t n, float p, uint64_t seed));
// dx += keep ? dy / (1 − p) : 0
ATTN_KERNEL(dropout_backward, void(const float* dy, float* dx, int64_t n, float p, uint64_t seed));

}  // namespace attn::kernels
