#pragma once
// Fused scaled dot-product attention kernels (FlashAttention-style): tiled, online
// softmax, never materialising the (T, S) score matrix unless weights are asked for.
// Raw pointers and sizes, no checks, no allocation: the op hands in per-worker scratch.
//
//   s[t, s']  = scale · q[t]·k[s'] + bias[t, s']      (-inf where masked)
//   P         = softmax over s' (a fully masked row gives P = 0)
//   out[t]    = Σ_s' P[t, s'] v[s']
//
// Masking: keys s' >= key_lengths[b], keys with key_padding_mask[b, s'] == 0, and with
// `causal` keys s' > t + (S - T) (bottom-right aligned, as FlashAttention / PyTorch's
// is_causal with T == S gives the usual lower triangle). With T > S the first T - S query
// rows see no key and are fully masked.
//
// Threads: work items are (b, h, query tile) in the forward; the backward runs one pass
// per head (a worker owns whole heads) when there are enough heads, otherwise a key-tile
// pass for dK/dV and a query-tile pass for dQ. Each gradient element receives the same
// tile products in the same order under either schedule, so results are bit-identical
// for any thread count.
#include <cstdint>

#include "kernels/isa.h"

namespace attn::kernels {

// The problem shared by the forward and backward kernels.
struct SdpaProblem {
  int64_t B = 0, H = 0, T = 0, S = 0, Dh = 0, Dv = 0;
  float scale = 1.0f;                         // multiplies q·k (already divided by the temperature)
  bool causal = false;                        // key s' visible to query t iff s' <= t + (S - T)
  bool causal_upper_left = false;             // with causal: iff s' <= t instead (torch's is_causal)
  const float* bias = nullptr;                // (T, S) additive, or null
  int64_t bias_head_stride = 0;               // 0: one (T, S) bias; T·S: one per (b, h) ((B, H, T, S))
  float* dscores = nullptr;                   // (B, H, T, S) zeroed, or null: the backward writes dS there
  const int32_t* key_lengths = nullptr;       // (B), each in [0, S], or null
  const int32_t* key_padding_mask = nullptr;  // (B, S), nonzero = keep, or null
};

constexpr int64_t kSdpaQueryTile = 128;        // query rows per tile (forward and backward)
constexpr int64_t kSdpaKeyTile = 256;          // keys per tile in the forward
constexpr int64_t kSdpaBackwardKeyTile = 128;  // keys per tile in the backward

// Number of workers the kernels split their work into (>= 1), and the scratch floats
// each worker needs; the op allocates workers × per-worker floats.
ATTN_KERNEL(sdpa_forward_workers, int64_t(const SdpaProblem& p));
ATTN_KERNEL(sdpa_forward_scratch_floats, int64_t(const SdpaProblem& p));  // per worker
ATTN_KERNEL(sdpa_backward_workers, int64_t(const SdpaProblem& p));
ATTN_KERNEL(sdpa_backward_scratch_floats, int64_t(const SdpaProblem& p));  // per worker

// Forward. q (B, H, T, Dh), k (B, H, S, Dh), v (B, H, S, Dv) → out (B, H, T, Dv) and the
// row statistics lse (B, H, T) = log Σ exp(s) (+inf for a fully masked row, so that
// exp(s - lse) = 0 there). weights (B, H, T, S) is filled with exp(s - lse) from the
// final statistics when non-null.
ATTN_KERNEL(sdpa_forward, void(const SdpaProblem& p, const float* q, const float* k, const float* v, float* out,
                               float* lse, float* weights, float* scratch, int64_t workers));

// Backward. Accumulates (+=) into whichever of dq (B, H, T, Dh), dk (B, H, S, Dh),
// dv (B, H, S, Dv) is non-null:
//   D = rowsum(dout ⊙ out) + rowsum(dweights ⊙ weights)
//   P = exp(s - lse), dP = dout vᵀ + dweights, dS = P ⊙ (dP - D)
//   dv += Pᵀ dout,  dq += scale · dS k,  dk += scale · dSᵀ q
// dout (B, H, T, Dv) or null (no gradient reached out); dweights (B, H, T, S) or null, in
// which case weights may be null too. delta is (B, H, T) scratch. With p.dscores, the score
// gradient dS = ∂L/∂s (also the bias's: s = scale q·k + bias) is written there (=) for every
// visible (t, s'); masked entries are left as they are (the op zeroes the buffer).
ATTN_KERNEL(sdpa_backward, void(const SdpaProblem& p, const float* q, const float* k, const float* v, const float* out,
                                const float* lse, const float* dout, const float* weights, const float* dweights,
                                float* dq, float* dk, float* dv, float* delta, float* scratch, int64_t workers));

}  // namespace attn::kernels
