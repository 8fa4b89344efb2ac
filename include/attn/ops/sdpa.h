#pragma once
// Scaled dot-product attention, fused (FlashAttention-style, tiled online softmax):
//
//   out = softmax(q kᵀ · scale / temperature + bias + mask) v      per (batch, head)
//
//   q (B, H, T, Dh), k (B, H, S, Dh), v (B, H, S, Dv)  →  out (B, H, T, Dv)
//
// The (T, S) score matrix is never materialised unless need_weights is set: memory beyond
// the inputs and outputs is O(T) per head (row statistics) plus O(tile²) per thread.
// One tape node; gradients for q, k and v (each only if it requires grad), and through
// `weights` too when it was asked for and used.
//
// Masks (combinable with causal and bias):
// - key_lengths int32 (B): keys at positions >= key_lengths[b] are masked; 0 <= length <= S.
// - key_padding_mask int32 (B, S): nonzero = keep. Exclusive with key_lengths.
// - causal, aligned as causal_align says (the names of PyTorch 2's torch.nn.attention.bias):
//   lower_right (the default): query t sees keys s <= t + (S - T), so the last query sees
//     every key (FlashAttention's convention, and what decoding with a KV cache needs: the
//     transformer's cached step, T = 1 query over S cached keys, uses it);
//   upper_left: query t sees keys s <= t, torch's is_causal=True for any T, S.
//   With T == S both are the usual lower triangle. A query that sees no key (lower_right
//   with T > S: the first T - S) is fully masked.
// - bias float32 (T, S), shared by every batch row and head, or one per (b, h): (B·H, T, S)
//   or (B, H, T, S), as torch's attn_mask. It may require grad (a learned relative-position
//   or ALiBi bias): its gradient is the score gradient dS, summed over (b, h) for (T, S).
// A fully masked query row gives zero output, zero weights and zero gradient, never NaN.
#include "attn/ops/softmax.h"
#include "attn/tensor.h"

namespace attn {

enum class CausalAlign { lower_right, upper_left };

struct SdpaOptions {
  Tensor key_lengths{};       // int32 (B), or undefined
  Tensor key_padding_mask{};  // int32 (B, S), nonzero = keep, or undefined
  bool causal = false;
  CausalAlign causal_align = CausalAlign::lower_right;
  Tensor bias{};             // float32 (T, S), (B·H, T, S) or (B, H, T, S), added to the scores
  float scale = 0.0f;        // multiplies q kᵀ; 0 means 1 / sqrt(Dh)
  float temperature = 1.0f;  // divides q kᵀ · scale (not the bias); must be > 0
  bool need_weights = false;
  // softmax (the fused kernel above), or sparsemax / entmax15 / entmax(α) (attn/ops/softmax.h):
  // then the (T, S) scores are materialised, normalised under the same masks and multiplied
  // by v (bmm ops, their own tape nodes). ValueError with a bias, and for α <= 1 or NaN.
  Normalizer normalizer{};
};

struct SdpaResult {
  Tensor out;      // (B, H, T, Dv)
  Tensor weights;  // (B, H, T, S) when need_weights, else undefined
};

// Throws ShapeError for a shape or dtype that breaks the contract above, ValueError for
// a key length outside [0, S], both masks given, temperature <= 0 or a non-finite scale.
SdpaResult sdpa(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaOptions& options = {});

}  // namespace attn
