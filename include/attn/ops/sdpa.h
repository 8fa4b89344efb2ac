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
// - causal: query t sees keys s <= t + (S - T), i.e. bottom-right aligned (the last query
//   sees every key, as in FlashAttention and torch's is_causal for decoding with a cache).
//   With T == S this is the usual lower triangle, equal to torch's is_causal=True. With
//   T > S the first T - S queries see nothing and are fully masked.
// A fully masked query row gives zero output, zero weights and zero gradient, never NaN.
#include "attn/tensor.h"

namespace attn {

struct SdpaOptions {
  Tensor key_lengths;       // int32 (B), or undefined
  Tensor key_padding_mask;  // int32 (B, S), nonzero = keep, or undefined
  bool causal = false;
  Tensor bias;              // float32 (T, S), added to every batch and head; no gradient
  float scale = 0.0f;       // multiplies q kᵀ; 0 means 1 / sqrt(Dh)
  float temperature = 1.0f; // divides q kᵀ · scale (not the bias); must be > 0
  bool need_weights = false;
};

struct SdpaResult {
  Tensor out;      // (B, H, T, Dv)
  Tensor weights;  // (B, H, T, S) when need_weights, else undefined
};

// Throws ShapeError for a shape or dtype that breaks the contract above, ValueError for
// a key length outside [0, S], both masks given, temperature <= 0, a non-finite scale,
// or a bias that requires grad.
SdpaResult sdpa(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaOptions& options = {});

}  // namespace attn
