#pragma once
// Hard monotonic attention (Raffel et al. 2017) and MoChA (Chiu & Raffel 2018) at inference, one
// decoder step (attn/ops/monotonic.h, monotonic_online_step). Raw pointers and sizes, no checks,
// no allocation. Inference only: there is no backward (training differentiates the expected
// alignment, kernels/monotonic.h). Compiled per ISA level (unlike kernels/monotonic.h) because
// its energies are additive scores: fast_math.h's additive_score, the same instructions as
// attention_additive_scores_forward, so a frame's energy here equals the dense path's bit for bit.
#include <cstdint>

#include "kernels/isa.h"

namespace attn::kernels {

// An additive energy e_j = Σ_a v_a tanh(u[b, a] + keys[b, j, a]) (+ *r when r is not null).
struct OnlineEnergy {
  const float* u;     // (B, A): the projected query W_q q + b
  const float* keys;  // (B, S, A): the projected keys
  const float* v;     // (A)
  const float* r;     // (1) or null
};

// Row b reads frames j = start[b], start[b] + 1, ... < L_b = lengths[b] and stops at the first
// with select's e_j > 0 (p_j > 0.5): selected[b] = j, or −1 when none fires. At a stop the
// weights are the softmax (in double, max-subtracted) of chunk's u over [j − W + 1, j] ∩ [0, S)
// (chunk.keys null: W = 1, the one-hot of the stop), and context[b] (E) = Σ_l w_l values[b, l];
// zeros where selected is −1. weights (B, S) may be null; else zero outside the chunk (an O(S)
// fill, the only O(S) work). scratch (B, W). Each row costs (frames read + W)·A + W·E.
ATTN_KERNEL(monotonic_online_forward,
            void(OnlineEnergy select, OnlineEnergy chunk, const float* values, const int32_t* lengths,
                 const int32_t* start, int64_t B, int64_t S, int64_t A, int64_t E, int64_t W, int32_t* selected,
                 float* context, float* weights, float* scratch));

}  // namespace attn::kernels
