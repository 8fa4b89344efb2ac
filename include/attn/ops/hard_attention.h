#pragma once
// Hard (stochastic) attention (Xu et al. 2015, "Show, Attend and Tell", §4.1): instead of
// the expected context Σ_s π(s) values_s, one source position k ~ π is sampled per step and
// the context is values_k. Sampling is not differentiable, so the attention distribution
// π = weights (e.g. from luong_attention / additive_attention with need_weights) is trained
// with the REINFORCE (score-function) estimator:
//
//   J(θ) = E_{k~π_θ}[L(k)],     ∇_θ J = E_{k~π_θ}[(L(k) − b) ∇_θ log π_θ(k)]
//
// for any baseline b that does not depend on the sampled k (E[∇ log π] = Σ_k ∇π_k = ∇1 = 0,
// so b changes the variance, never the expectation). With rewards r = −L, the surrogate
//
//   reinforce_loss = −mean_i((r_i − b) · log π(k_i)) − λ · mean_i(H(π_i)),
//   H(π_i) = −Σ_s π_i(s) log π_i(s)
//
// has exactly that gradient (averaged over the sampled rows) plus the gradient of an entropy
// bonus λ that keeps the distribution from collapsing early. Typical step:
//
//   AttentionResult a = luong_attention(q, keys, values, lengths);  // weights on
//   HardAttentionSample h = hard_attention_sample(a.weights, values, /*training=*/true, rng);
//   ... use h.context, compute per-row rewards r (no grad) ...
//   Tensor loss = reinforce_loss(h.log_prob, r, baseline, 0.01f, a.weights);
//   backward(loss);  baseline.update(mean reward)   // update AFTER the loss: b must not see r
//
// The values reached by h.context are trained by ordinary backprop through it (add the
// task loss of the context to the REINFORCE loss).
//
// Options shared with the other attention ops: masks come with the weights (a masked position
// has weight 0 and is never sampled; a fully masked row gives position −1). Parameters: hard
// attention has none of its own — the distribution's come from the op that made the weights
// (nn::additive_attention_init, nn::luong_attention_init, ...: Xavier). Dropout on the weights does not
// apply here: the sampling is itself the noise, and post-dropout weights are not a
// distribution (hard_attention_sample rejects them) — compute the weights with dropout = 0.
#include "attn/random.h"
#include "attn/tensor.h"

namespace attn {

struct HardAttentionSample {
  Tensor positions;  // int32 (B) or (B, T): the chosen source position, −1 for an all-zero row
  Tensor context;    // (B, E) or (B, T, E): values[b, position]; zeros for an all-zero row
  Tensor log_prob;   // (B) or (B, T): log weights[.., position]; 0 for an all-zero row
};

// weights (B, S) or (B, T, S): a distribution per row (entries >= 0 and finite, each row sums
// to 1 within 1e-3) or an all-zero row (fully masked: position −1, zero context, zero log
// probability, no gradient). values (B, S, E).
// training: sample k ~ weights by inverse CDF with one rng.uniform() per row, rows in order
// (so a seed fixes the draw); otherwise the first argmax, and rng is not touched.
// Gradients: context → values only (dvalues[b, k] += dcontext); log_prob → weights only
// (dweights[k] += dlog_prob / weights[k]). One tape node.
HardAttentionSample hard_attention_sample(const Tensor& weights, const Tensor& values, bool training, Rng& rng);

// A moving-average baseline b for REINFORCE:  b ← decay · b + (1 − decay) · reward.
// The first update sets b = reward (so b does not crawl up from 0); before any update b = value.
class ReinforceBaseline {
 public:
  explicit ReinforceBaseline(float decay = 0.9f, float value = 0.0f) : decay(decay), value(value) {}
  float decay = 0.9f;  // in [0, 1)
  float value = 0.0f;
  int64_t updates = 0;
  void update(float reward);
  void update(const Tensor& rewards);  // with the mean of a float32 tensor of rewards
};

// loss () = −mean_i((r_i − b) · log_probs_i) − λ · mean_i(H(weights_i)),  b = baseline.value.
//   log_probs           (B) or (B, T), float32 (from hard_attention_sample)
//   rewards             the same shape, float32; constants (never differentiated)
//   entropy_bonus λ     finite; 0 drops the entropy term
//   weights_for_entropy log_probs' shape + (S): the distributions the positions were drawn
//                       from; required when λ != 0, may be undefined when λ == 0
// Backward: dlog_probs_i += −g (r_i − b) / M;  dweights += g λ / M · (log w + 1) where w > 0
// (M = log_probs.numel(); zero weights are masked positions and get nothing). An empty
// batch gives 0.
Tensor reinforce_loss(const Tensor& log_probs, const Tensor& rewards, const ReinforceBaseline& baseline,
                      float entropy_bonus = 0.0f, const Tensor& weights_for_entropy = Tensor());

}  // namespace attn
