// Hard attention: a sampled (or argmax) source position per step, one tape node; and the
// REINFORCE surrogate loss with a moving-average baseline and an entropy bonus, one node.
#include "attn/ops/hard_attention.h"

#include <fmt/format.h>

#include <cmath>

#include "attn/autodiff/tape.h"
#include "attn/shape.h"
#include "kernels/hard_attention.h"

namespace attn {

HardAttentionSample hard_attention_sample(const Tensor& weights, const Tensor& values, bool training, Rng& rng) {
  const std::string op = "hard_attention_sample";
  ShapeContract c(op);
  bool block = false;
  if (weights.defined() && weights.rank() == 3) {
    c.check("weights", weights, {"B", "T", "S"});
    block = true;
  } else if (weights.defined() && weights.rank() == 2) {
    c.check("weights", weights, {"B", "S"});
  } else {
    throw ShapeError(op + ": 'weights' expected (B, S) or (B, T, S), got " +
                     (weights.defined() ? weights.shape().str() : std::string("an undefined tensor")));
  }
  c.check("values", values, {"B", "S", "E"});
  const int64_t B = c["B"], T = block ? weights.dim(1) : 1, S = c["S"], E = c["E"], N = B * T;
  // Each row: a distribution or all zeros (fully masked).
  const float* w = weights.f32();
  for (int64_t r = 0; r < N; ++r) {
    double sum = 0.0;
    for (int64_t s = 0; s < S; ++s) {
      const float x = w[r * S + s];
      if (!(x >= 0.0f) || !std::isfinite(x))
        throw ValueError(op + ": 'weights' value " + fmt::format("{}", x) + " at row " + std::to_string(r) +
                         ", position " + std::to_string(s) + " is negative or not finite");
      sum += x;
    }
    if (sum != 0.0 && std::fabs(sum - 1.0) > 1e-3)
      throw ValueError(op + ": 'weights' row " + std::to_string(r) + " sums to " + fmt::format("{:.6g}", sum) +
                       ", expected 1 (a distribution) or 0 (a fully masked row); renormalise it first (weights after "
                       "dropout, or local-p's Gaussian-scaled weights, are not distributions: sample from weights "
                       "computed with dropout = 0)");
  }

  Tensor positions = Tensor::empty(block ? Shape{B, T} : Shape{B}, DType::i32);
  if (training) {
    Tensor u = Tensor::empty({N});
    float* up = u.f32();
    for (int64_t r = 0; r < N; ++r) up[r] = rng.uniform();
    kernels::hard_attention_choose(w, up, N, S, positions.i32());
  } else {
    kernels::hard_attention_choose(w, nullptr, N, S, positions.i32());
  }
  Tensor context = Tensor::empty(block ? Shape{B, T, E} : Shape{B, E});
  Tensor log_prob = Tensor::empty(block ? Shape{B, T} : Shape{B});
  kernels::hard_attention_gather_forward(positions.i32(), w, values.f32(), B, T, S, E, context.f32(), log_prob.f32());
  HardAttentionSample result{positions, context, log_prob};
  if (!autodiff::needs_grad(weights, values)) return result;

  // context = values[k]: dvalues[k] += dcontext;  log_prob = log w_k: dw_k += dlog_prob / w_k
  autodiff::record("hard_attention_sample", {context, log_prob},
                   [positions, weights, values, context, log_prob, B, T, S, E]() {
                     const float* dcontext = context.has_grad() ? context.grad().f32() : nullptr;
                     const float* dlog = log_prob.has_grad() ? log_prob.grad().f32() : nullptr;
                     float* dvalues = values.requires_grad() && dcontext ? values.grad_accumulator().f32() : nullptr;
                     float* dweights = weights.requires_grad() && dlog ? weights.grad_accumulator().f32() : nullptr;
                     kernels::hard_attention_gather_backward(positions.i32(), weights.f32(), dcontext, dlog, B, T, S, E,
                                                             dvalues, dweights);
                   });
  return result;
}

void ReinforceBaseline::update(float reward) {
  if (!(decay >= 0.0f && decay < 1.0f))
    throw ValueError("ReinforceBaseline: decay must be in [0, 1), got " + fmt::format("{}", decay));
  if (!std::isfinite(reward))
    throw ValueError("ReinforceBaseline: reward must be finite, got " + fmt::format("{}", reward));
  value = updates == 0 ? reward : decay * value + (1.0f - decay) * reward;
  ++updates;
}

void ReinforceBaseline::update(const Tensor& rewards) {
  if (!rewards.defined() || rewards.dtype() != DType::f32 || rewards.numel() == 0)
    throw ShapeError("ReinforceBaseline: 'rewards' expected a non-empty float32 tensor, got " +
                     (rewards.defined() ? rewards.shape().str() : std::string("an undefined tensor")));
  const float* r = rewards.f32();
  double sum = 0.0;
  for (int64_t i = 0; i < rewards.numel(); ++i) sum += r[i];
  update(static_cast<float>(sum / static_cast<double>(rewards.numel())));
}

Tensor reinforce_loss(const Tensor& log_probs, const Tensor& rewards, const ReinforceBaseline& baseline,
                      float entropy_bonus, const Tensor& weights_for_entropy) {
  const std::string op = "reinforce_loss";
  ShapeContract c(op);
  bool block = false;
  if (log_probs.defined() && log_probs.rank() == 2) {
    c.check("log_probs", log_probs, {"B", "T"});
    c.check("rewards", rewards, {"B", "T"});
    block = true;
  } else if (log_probs.defined() && log_probs.rank() == 1) {
    c.check("log_probs", log_probs, {"B"});
    c.check("rewards", rewards, {"B"});
  } else {
    throw ShapeError(op + ": 'log_probs' expected (B) or (B, T), got " +
                     (log_probs.defined() ? log_probs.shape().str() : std::string("an undefined tensor")));
  }
  if (!std::isfinite(entropy_bonus))
    throw ValueError(op + ": entropy_bonus must be finite, got " + fmt::format("{}", entropy_bonus));
  if (!std::isfinite(baseline.value))
    throw ValueError(op + ": baseline value must be finite, got " + fmt::format("{}", baseline.value));
  const Tensor& w = weights_for_entropy;
  if (entropy_bonus != 0.0f && !w.defined())
    throw ValueError(op + ": entropy_bonus " + fmt::format("{}", entropy_bonus) +
                     " needs 'weights_for_entropy' (the distributions the positions were sampled from)");
  if (w.defined()) {
    if (block)
      c.check("weights_for_entropy", w, {"B", "T", "S"});
    else
      c.check("weights_for_entropy", w, {"B", "S"});
  }
  const float* r = rewards.f32();
  for (int64_t i = 0; i < rewards.numel(); ++i)
    if (!std::isfinite(r[i]))
      throw ValueError(op + ": 'rewards' value " + fmt::format("{}", r[i]) + " at flat index " + std::to_string(i) +
                       " is not finite");

  const int64_t M = log_probs.numel();
  const float b = baseline.value;
  const bool with_entropy = entropy_bonus != 0.0f && M > 0;
  const int64_t S = with_entropy ? w.dim(-1) : 0;
  double total = 0.0;
  const float* lp = log_probs.f32();
  for (int64_t i = 0; i < M; ++i) total -= (static_cast<double>(r[i]) - b) * lp[i];
  if (with_entropy) total -= static_cast<double>(entropy_bonus) * kernels::reinforce_entropy_sum(w.f32(), M, S);
  Tensor loss = Tensor::scalar(M > 0 ? static_cast<float>(total / static_cast<double>(M)) : 0.0f);

  if (M == 0 || !autodiff::needs_grad(log_probs, with_entropy ? w : Tensor())) return loss;
  Tensor rewards_saved = rewards.detach();
  autodiff::record("reinforce_loss", {loss},
                   [log_probs, rewards_saved, w, loss, b, entropy_bonus, with_entropy, M, S]() {
                     const float g = loss.grad().f32()[0];
                     // loss = −(1/M) Σ (r − b) lp − (λ/M) Σ H:  dlp_i = −g (r_i − b) / M
                     if (log_probs.requires_grad()) {
                       float* dlp = log_probs.grad_accumulator().f32();
                       const float* r = rewards_saved.f32();
                       const float scale = -g / static_cast<float>(M);
                       for (int64_t i = 0; i < M; ++i) dlp[i] += scale * (r[i] - b);
                     }
                     // dw = −(gλ/M) dH/dw  (the kernel adds coef · dH/dw)
                     if (with_entropy && w.requires_grad())
                       kernels::reinforce_entropy_backward(w.f32(), M, S, -g * entropy_bonus / static_cast<float>(M),
                                                           w.grad_accumulator().f32());
                   });
  return loss;
}

}  // namespace attn
