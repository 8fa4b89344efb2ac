#pragma once
// Fused cross-entropy CPU kernels (log-softmax inside): raw pointers and sizes, no
// checks, no allocation. The backward kernel accumulates (+=) into the logits gradient.
#include <cstdint>

#include "kernels/isa.h"

namespace attn::kernels {

// For each row r of logits (rows, V) with target t = targets[r]:
//   lse[r]  = log Σ_j exp(logits[r, j])                    (max-subtracted)
//   loss[r] = (1 − ε)(lse − logits[r, t]) + ε (lse − mean_j logits[r, j])
// and loss[r] = 0, lse[r] = 0 when t == ignore_index. Targets must be valid (checked by
// the op). Threaded over rows.
ATTN_KERNEL(cross_entropy_forward, void(const float* logits, const int32_t* targets, int64_t rows, int64_t v,
                                        int32_t ignore_index, float smoothing, float* lse, float* loss));

// dlogits[r] += scale · (softmax(logits[r]) − (1 − ε) onehot(t) − ε / V) for every row
// whose target is not ignore_index; ignored rows get nothing. softmax = exp(logits − lse).
ATTN_KERNEL(cross_entropy_backward,
            void(const float* logits, const int32_t* targets, const float* lse, int64_t rows, int64_t v,
                 int32_t ignore_index, float smoothing, float scale, float* dlogits));

}  // namespace attn::kernels
