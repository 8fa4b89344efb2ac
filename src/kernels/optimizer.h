#pragma once
// Optimizer update kernels: raw pointers and sizes, no checks, no allocation. The optimizer
// (attn/train/optimizer.h) computes the step's scalars; the kernel runs the element loop,
// vectorised at each ISA level. Every element's arithmetic is the same sequence of IEEE
// operations at every level (no contraction into FMA), so the levels give the same bits.
#include <cstdint>

#include "kernels/isa.h"

namespace attn::kernels {

// The scalars of one Adam / AdamW step, as attn::train::Adam::update derives them.
struct AdamScalars {
  float w1;         // 1 − β1: m ← lerp(m, d, w1), torch.lerp's two-sided form
  float beta2, w2;  // v ← β2 v + (1 − β2) d²
  float l2;         // Adam's weight decay folded into the gradient: d = g + l2 p (0 for AdamW)
  float decay;      // AdamW's decoupled decay: p ← decay · p first (1 for Adam)
  float step_size;  // lr / (1 − β1^t)
  float bc2_sqrt;   // √(1 − β2^t)
  float eps;
};

// p ← p·decay − step_size · m̂ / (√v / bc2_sqrt + eps), m and v updated in place.   // (n)
ATTN_KERNEL(adam_update, void(float* p, const float* g, float* m, float* v, int64_t n, const AdamScalars& s));

}  // namespace attn::kernels
