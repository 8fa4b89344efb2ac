#pragma once
// Xavier-initialised parameters for the RNN attention ops (attn/ops/attention.h,
// attn/ops/local_attention.h): torch.nn.init.xavier_uniform_ (nn::xavier_uniform_), a vector
// v (A) drawn as a (1, A) matrix, biases zero, requires_grad set, drawn from the given Rng in
// the fixed order each function documents (the order the step-attention modules of
// attn/nn/step_attention.h draw them in). Sizes < 1: ValueError naming the function.
#include <cstdint>

#include "attn/ops/attention.h"
#include "attn/ops/local_attention.h"
#include "attn/random.h"
#include "attn/tensor.h"

namespace attn::nn {

// Bahdanau: w_q (A, D), w_k (A, E), v (A) Xavier, drawn in that order; bias (A) zeros;
// g () = sqrt(1 / A) when normalize, else undefined.
struct AdditiveParams {
  Tensor w_q, w_k, bias, v, g;
};
AdditiveParams additive_attention_init(int64_t D, int64_t E, int64_t A, Rng& rng, bool normalize = false);

// Chorowski location-aware: the additive parameters as additive_attention_init(D, E, A), then
// filters F (K, r) and w_loc U (A, K), Xavier, drawn in that order. r must be odd.
struct LocationAwareParams {
  Tensor w_q, w_k, bias, v, filters, w_loc;
};
LocationAwareParams location_aware_attention_init(int64_t D, int64_t E, int64_t A, int64_t K, int64_t r, Rng& rng);

// Luong: dot -> nothing; general -> w (D, E); concat -> w (A, D+E) then v (A). `A` is used by
// concat only. scale stays undefined (set it to Tensor::full({}, 1.0f) for scaled Luong).
struct LuongParams {
  Tensor w, v;
};
LuongParams luong_attention_init(LuongScore score, int64_t D, int64_t E, int64_t A, Rng& rng);

// Luong location: w_a (S_max, D) Xavier, b_a (S_max) zeros.
struct LocationParams {
  Tensor w_a, b_a;
};
LocationParams location_attention_init(int64_t D, int64_t S_max, Rng& rng);

// Luong local, drawn in this order: general -> w (D, E); local-p -> w_p (A, D), then v_p (A).
// Unused ones stay undefined, so they can be moved into LocalOptions as they are. `A` is
// used by local-p only.
struct LocalParams {
  Tensor w, w_p, v_p;
};
LocalParams local_attention_init(LocalMode mode, LuongScore score, int64_t D, int64_t E, int64_t A, Rng& rng);

}  // namespace attn::nn
