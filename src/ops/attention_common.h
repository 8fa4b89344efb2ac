#pragma once
// Private to the attention ops (additive_attention.cpp, luong_attention.cpp): the boundary
// checks they share and the softmax + context part every score function ends with.
#include <fmt/format.h>

#include <cmath>
#include <string>

#include "attn/autodiff/tape.h"
#include "attn/ops/softmax.h"
#include "attn/random.h"
#include "attn/shape.h"
#include "attn/tensor.h"
#include "kernel_normalizer.h"
#include "kernels/attention.h"
#include "kernels/blas.h"
#include "kernels/dropout.h"
#include "kernels/normalizer.h"
#include "kernels/reduce.h"
#include "weight_gemm.h"

namespace attn::attention_detail {

// The query is one step (B, D) or a block of steps (B, T, D); a step is a block with T = 1.
struct QueryShape {
  int64_t B = 0, T = 1, D = 0;
  bool block = false;  // rank 3: outputs keep the T dimension
  Shape out(int64_t last) const { return block ? Shape{B, T, last} : Shape{B, last}; }
};

inline QueryShape check_query(ShapeContract& c, const Tensor& query) {
  if (query.defined() && query.rank() == 3) {
    c.check("query", query, {"B", "T", "D"});
    return {query.dim(0), query.dim(1), query.dim(2), true};
  }
  if (query.defined() && query.rank() == 2) {
    c.check("query", query, {"B", "D"});
    return {query.dim(0), 1, query.dim(1), false};
  }
  std::string hint;
  if (query.defined() && query.rank() == 1)
    hint = ": one query without a batch dimension? reshape it to (1, D)";
  else if (query.defined() && query.rank() == 4)
    hint = ": a multi-head query (B, H, T, Dh)? use sdpa or nn::MultiheadAttention, or merge the heads to (B, T, D)";
  throw ShapeError(c.op() + ": 'query' expected (B, D) or (B, T, D), got " +
                   (query.defined() ? query.shape().str() : std::string("an undefined tensor")) + hint);
}

// The query and the keys (B, S, E) and values (B, S, E) that the Luong-family ops read.
inline QueryShape check_query_keys_values(ShapeContract& c, const Tensor& query, const Tensor& keys,
                                          const Tensor& values) {
  const QueryShape q = check_query(c, query);
  c.check("keys", keys, {"B", "S", "E"});
  c.check("values", values, {"B", "S", "E"});
  return q;
}

// lengths: int32 (B), each in [0, S].
inline void check_lengths(ShapeContract& c, const Tensor& lengths, int64_t S) {
  if (lengths.defined() && lengths.dtype() != DType::i32)
    throw ShapeError(c.op() + ": 'lengths' expected dtype int32, got " + dtype_name(lengths.dtype()) +
                     ": lengths (B) count the real source positions; pass an int32 tensor");
  c.check("lengths", lengths, {"B"}, DType::i32);
  check_length_values(c.op(), "lengths", lengths, 0, "S", S,
                      ": lengths count real positions of the keys (S = keys.dim(1)); target lengths passed by "
                      "mistake, or keys truncated?");
}

// The mask of one call: `lengths` always defined (the extent L_b of each row: the given
// lengths, 1 + the last kept position of the mask, or S), `keep` the (B, S) mask or undefined.
struct KeyMask {
  Tensor lengths;  // int32 (B)
  Tensor keep;     // int32 (B, S), nonzero = keep, or undefined
  const int32_t* keep_ptr() const { return keep.defined() ? keep.i32() : nullptr; }
};

// Exactly one of lengths / key_padding_mask, or neither. B and S must be bound in `c`.
inline KeyMask check_key_mask(ShapeContract& c, const Tensor& lengths, const Tensor& mask) {
  const int64_t B = c["B"], S = c["S"];
  if (lengths.defined() && mask.defined())
    throw ValueError(c.op() +
                     ": 'lengths' and 'key_padding_mask' are exclusive; give one of them (or neither), "
                     "not both");
  if (lengths.defined()) {
    check_lengths(c, lengths, S);
    return {lengths, Tensor()};
  }
  Tensor extent = Tensor::empty({B}, DType::i32);
  int32_t* e = extent.i32();
  if (!mask.defined()) {
    for (int64_t b = 0; b < B; ++b) e[b] = static_cast<int32_t>(S);
    return {extent, Tensor()};
  }
  if (mask.dtype() != DType::i32)
    throw ValueError(c.op() + ": 'key_padding_mask' must be int32 (nonzero = keep, 0 = masked), got " +
                     dtype_name(mask.dtype()) + ": convert a boolean mask with astype(int32)");
  c.check("key_padding_mask", mask, {"B", "S"}, DType::i32);
  const int32_t* k = mask.i32();
  for (int64_t b = 0; b < B; ++b) {
    int64_t last = -1;
    for (int64_t s = 0; s < S; ++s)
      if (k[b * S + s]) last = s;
    e[b] = static_cast<int32_t>(last + 1);
  }
  return {extent, mask};
}

// The dot score compares the query and the keys directly: ShapeError unless D == E.
inline void check_dot_sizes(const std::string& op, int64_t D, int64_t E) {
  if (D != E)
    throw ShapeError(op + ": query size D=" + std::to_string(D) + " must equal key size E=" + std::to_string(E) +
                     " for the dot score (a bidirectional encoder doubles E?): use score 'general' to learn a "
                     "projection W (D, E), or project the state");
}

inline float check_temperature(const std::string& op, float temperature) {
  if (!(temperature > 0.0f) || !std::isfinite(temperature))
    throw ValueError(op + ": temperature must be finite and > 0, got " + fmt::format("{}", temperature) +
                     ": it divides the scores (τ < 1 sharpens, τ > 1 flattens, 1 leaves them as they are)");
  return temperature;
}

// The kernels' normaliser of one call: options.normalizer, or the smoothing's normalised
// sigmoid (exclusive with a sparse normaliser). ValueError for entmax's α <= 1 or NaN.
inline kernels::Normalizer check_attention_normalizer(const std::string& op, const Normalizer& normalizer,
                                                      bool smoothing = false) {
  check_normalizer(op, normalizer);
  if (!smoothing) return kernel_normalizer(normalizer);
  if (normalizer.kind != NormalizerKind::softmax)
    throw ValueError(op + ": smoothing normalises σ(e) in place of the softmax; it cannot be combined with the " +
                     normalizer_name(normalizer.kind) + " normaliser");
  return {kernels::NormalizerKind::sigmoid};
}

// Dropout on the weights of one call: `on` when training with p > 0; seed drawn once.
struct WeightDropout {
  bool on = false;
  float p = 0.0f;
  uint64_t seed = 0;
};

inline WeightDropout check_dropout(const std::string& op, float p, bool training, Rng* rng) {
  if (!(p >= 0.0f && p < 1.0f))
    throw ValueError(op + ": dropout must be in [0, 1), got " + fmt::format("{}", p) +
                     (p == 1.0f ? ": p = 1 would drop every weight" : ""));
  WeightDropout d;
  if (!training || p == 0.0f) return d;
  if (!rng)
    throw ValueError(op + ": dropout = " + fmt::format("{}", p) +
                     " in training needs options.rng (the seed source, one draw per call); or set training = false");
  d.on = true;
  d.p = p;
  d.seed = rng->next();
  return d;
}

// Sizes of one call.
struct Dims {
  int64_t B, T, S, E;
};

// The normaliser of one call's score rows (B, T, S) over each row's extent and keep mask.
inline kernels::NormalizerRows normalizer_rows(const Dims& d, const Tensor& lengths, const int32_t* keep) {
  return {.rows = d.B * d.T, .n = d.S, .group = d.T, .extents = lengths.i32(), .mask = keep};
}

// weights = masked normalise(alpha · scores) (B, T, S) (`norm.scale` is set to alpha): softmax,
// the smoothing's normalised sigmoid, or a sparse normaliser (then `weights` must not alias
// `scores`; the sigmoid's backward reads the scores, so it must not either); used =
// dropout(weights) (or weights itself); context = used · values (B, T, E). `used` is what the
// op returns as its weights.
inline void softmax_context_forward(const Tensor& scores, float alpha, const Tensor& values, const KeyMask& mask,
                                    const WeightDropout& drop, const Dims& d, Tensor& weights, Tensor& used,
                                    Tensor& context, kernels::Normalizer norm = {}) {
  norm.scale = alpha;
  kernels::normalizer_forward(norm, normalizer_rows(d, mask.lengths, mask.keep_ptr()), scores.f32(), weights.f32());
  if (drop.on) {
    used = Tensor::empty(weights.shape());
    kernels::dropout_forward(weights.f32(), used.f32(), weights.numel(), drop.p, drop.seed);
  } else {
    used = weights;
  }
  kernels::attention_context_forward(used.f32(), values.f32(), mask.lengths.i32(), d.B, d.T, d.S, d.E, context.f32());
}

// Backward through context = used · values, used = dropout(weights) and weights = masked
// normalise(alpha · scores) (`scores`: the forward's scores, needed by the sigmoid only; may be
// undefined otherwise): accumulates the values' gradient and, when `want_dscores`,
// returns the gradient of the raw scores (B, T, S), zero past each row's extent and on masked
// positions (their weight is 0). The gradient of `used` (when it was an output of the node)
// is included. Returns an undefined tensor otherwise; `dweights_out`, when given, receives
// the gradient of the softmax's output (a learned scale's gradient needs it).
inline Tensor softmax_context_backward(const Tensor& weights, const Tensor& used, const Tensor& context,
                                       const Tensor& values, const Tensor& lengths, const WeightDropout& drop,
                                       const Dims& d, float alpha, bool want_dscores, Tensor* dweights_out = nullptr,
                                       kernels::Normalizer norm = {}, const Tensor& scores = Tensor()) {
  const float* dcontext = context.has_grad() ? context.grad().f32() : nullptr;
  Tensor dused;
  if (want_dscores) dused = used.has_grad() ? used.grad().clone() : Tensor::zeros(used.shape());
  float* dvalues = values.requires_grad() ? values.grad_accumulator().f32() : nullptr;
  if (dcontext && (dvalues || want_dscores))
    kernels::attention_context_backward(used.f32(), values.f32(), dcontext, lengths.i32(), d.B, d.T, d.S, d.E,
                                        want_dscores ? dused.f32() : nullptr, dvalues);
  if (!want_dscores) return Tensor();
  Tensor dweights = dused;
  if (drop.on) {  // dweights = keep ⊙ dused / (1 − p)
    dweights = Tensor::zeros(used.shape());
    kernels::dropout_backward(dused.f32(), dweights.f32(), dused.numel(), drop.p, drop.seed);
  }
  if (dweights_out) *dweights_out = dweights;
  Tensor dscores = Tensor::zeros({d.B, d.T, d.S});
  norm.scale = alpha;
  kernels::normalizer_backward(norm, normalizer_rows(d, lengths, nullptr), scores.defined() ? scores.f32() : nullptr,
                               weights.f32(), dweights.f32(), dscores.f32());
  return dscores;
}

// The additive score's query part, u = Q W_qᵀ + b: query (N, D), w_q (A, D), bias (A) -> (N, A).
inline Tensor additive_query_forward(const Tensor& query, const Tensor& w_q, const Tensor& bias, int64_t N, int64_t D,
                                     int64_t A) {
  Tensor u = Tensor::empty({N, A});
  detail::weight_gemm("additive_attention", w_q, true, N, A, D, query.f32(), D, w_q.f32(), D, nullptr, u.f32(), A);
  kernels::attention_add_bias_rows(u.f32(), bias.f32(), N, A);
  return u;
}

// Its backward: dQ += dU W_q,  dW_q += dUᵀ Q,  db += Σ_rows dU.
inline void additive_query_backward(const Tensor& du, const Tensor& query, const Tensor& w_q, const Tensor& bias,
                                    int64_t N, int64_t D, int64_t A) {
  if (query.requires_grad())
    kernels::gemm(false, false, N, D, A, 1.0f, du.f32(), A, w_q.f32(), D, 1.0f, query.grad_accumulator().f32(), D);
  if (w_q.requires_grad()) autodiff::accumulate_weight_grad(w_q, du, query);
  if (bias.requires_grad()) kernels::sum_columns_into(du.f32(), N, A, bias.grad_accumulator().f32());
}

// Records the node with the weights as a second output only when they were asked for.
template <class Fn>
void record_attention(const char* op, const Tensor& context, const Tensor& weights, bool need_weights, Fn&& fn) {
  if (need_weights)
    autodiff::record(op, {context, weights}, std::forward<Fn>(fn));
  else
    autodiff::record(op, {context}, std::forward<Fn>(fn));
}

inline float* grad_or_null(const Tensor& t) { return t.requires_grad() ? t.grad_accumulator().f32() : nullptr; }

}  // namespace attn::attention_detail
