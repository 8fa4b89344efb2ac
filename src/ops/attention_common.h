#pragma once
// Private to the attention ops (additive_attention.cpp, luong_attention.cpp): the boundary
// checks they share and the softmax + context part every score function ends with.
#include <fmt/format.h>

#include <cmath>
#include <string>

#include "attn/autodiff/tape.h"
#include "attn/kernels/attention.h"
#include "attn/shape.h"
#include "attn/tensor.h"

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
  throw ShapeError(c.op() + ": 'query' expected (B, D) or (B, T, D), got " +
                   (query.defined() ? query.shape().str() : std::string("an undefined tensor")));
}

// lengths: int32 (B), each in [0, S].
inline void check_lengths(ShapeContract& c, const Tensor& lengths, int64_t S) {
  c.check("lengths", lengths, {"B"}, DType::i32);
  const int32_t* l = lengths.i32();
  for (int64_t b = 0; b < lengths.numel(); ++b)
    if (l[b] < 0 || l[b] > S)
      throw ValueError(c.op() + ": 'lengths' value " + std::to_string(l[b]) + " at batch index " +
                       std::to_string(b) + " is out of range [0, S=" + std::to_string(S) + "]");
}

inline float check_temperature(const std::string& op, float temperature) {
  if (!(temperature > 0.0f) || !std::isfinite(temperature))
    throw ValueError(op + ": temperature must be finite and > 0, got " + fmt::format("{}", temperature));
  return temperature;
}

// Sizes of one call.
struct Dims {
  int64_t B, T, S, E;
};

// weights = masked softmax(alpha · scores) (B, T, S); context = weights · values (B, T, E).
inline void softmax_context_forward(const Tensor& scores, float alpha, const Tensor& values, const Tensor& lengths,
                                    const Dims& d, Tensor& weights, Tensor& context) {
  kernels::attention_masked_softmax_forward(scores.f32(), lengths.i32(), d.B, d.T, d.S, alpha, weights.f32());
  kernels::attention_context_forward(weights.f32(), values.f32(), lengths.i32(), d.B, d.T, d.S, d.E,
                                     context.f32());
}

// Backward through context = weights · values and weights = masked softmax(alpha · scores):
// accumulates the values' gradient and, when `want_dscores`, returns the gradient of the
// raw scores (B, T, S), zero past each row's length. The weights' own gradient (when they
// were an output of the node) is included. Returns an undefined tensor otherwise.
inline Tensor softmax_context_backward(const Tensor& weights, const Tensor& context, const Tensor& values,
                                       const Tensor& lengths, const Dims& d, float alpha, bool want_dscores) {
  const float* dcontext = context.has_grad() ? context.grad().f32() : nullptr;
  Tensor dweights;
  if (want_dscores) dweights = weights.has_grad() ? weights.grad().clone() : Tensor::zeros(weights.shape());
  float* dvalues = values.requires_grad() ? values.grad_accumulator().f32() : nullptr;
  if (dcontext && (dvalues || want_dscores))
    kernels::attention_context_backward(weights.f32(), values.f32(), dcontext, lengths.i32(), d.B, d.T, d.S, d.E,
                                        want_dscores ? dweights.f32() : nullptr, dvalues);
  if (!want_dscores) return Tensor();
  Tensor dscores = Tensor::zeros({d.B, d.T, d.S});
  kernels::attention_masked_softmax_backward(weights.f32(), dweights.f32(), lengths.i32(), d.B, d.T, d.S, alpha,
                                             dscores.f32());
  return dscores;
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
