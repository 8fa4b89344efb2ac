// Luong attention, one fused node per call:
//   dot      e_{t,s} = q_tᵀ k_s
//   general  e_{t,s} = (q_t W)ᵀ k_s           q W computed once per query row (one GEMM)
//   concat   e_{t,s} = vᵀ tanh(W_q q_t + W_k k_s),  W = [W_q | W_k] split, each side projected once
//   location e_{t,s} = (W_a q_t + b_a)_s      over the first S of S_max positions
// then a_t = masked softmax(scale · e_t / τ) and c_t = Σ_s a_{t,s} values_s.
#include "attention_common.h"
#include "attn/ops/attention.h"
#include "kernels/blas.h"
#include "kernels/reduce.h"
#include "weight_gemm.h"

namespace attn {

using attention_detail::Dims;
using attention_detail::grad_or_null;

namespace {

// The masked softmax of the scores, its dropout and the context (attention_common.h's
// softmax_context_forward) in tensors of the query's shape: weights and used (B, T, S) or
// (B, S), context (B, T, E) or (B, E).
struct SoftmaxContext {
  Tensor weights, used, context;
};
SoftmaxContext softmax_context(const Tensor& scores, float alpha, const Tensor& values,
                               const attention_detail::KeyMask& mask, const attention_detail::WeightDropout& drop,
                               const attention_detail::Dims& d, const attention_detail::QueryShape& q,
                               const kernels::Normalizer& norm) {
  SoftmaxContext r{Tensor::empty(q.out(d.S)), Tensor(), Tensor::empty(q.out(d.E))};
  attention_detail::softmax_context_forward(scores, alpha, values, mask, drop, d, r.weights, r.used, r.context, norm);
  return r;
}

const char* luong_op_name(LuongScore score) {
  switch (score) {
    case LuongScore::dot:
      return "luong_attention(dot)";
    case LuongScore::general:
      return "luong_attention(general)";
    case LuongScore::concat:
      return "luong_attention(concat)";
  }
  return "luong_attention";
}

void require_undefined(const std::string& op, const char* name, const Tensor& t) {
  if (t.defined()) throw ValueError(op + ": '" + name + "' is not used by this score; leave it undefined");
}

}  // namespace

AttentionResult luong_attention(const Tensor& query, const Tensor& keys, const Tensor& values, const Tensor& lengths,
                                const LuongOptions& options) {
  const LuongScore score = options.score;
  if (score != LuongScore::dot && score != LuongScore::general && score != LuongScore::concat)
    throw ValueError("luong_attention: unknown score function " + std::to_string(static_cast<int>(score)));
  const std::string op = luong_op_name(score);
  ShapeContract c(op);
  const attention_detail::QueryShape q = attention_detail::check_query_keys_values(c, query, keys, values);
  const int64_t B = q.B, T = q.T, D = q.D, S = c["S"], E = c["E"], N = B * T;
  const Tensor& w = options.w;
  const Tensor& v = options.v;
  const Tensor& scale = options.scale;
  int64_t A = 0;
  switch (score) {
    case LuongScore::dot:
      require_undefined(op, "w", w);
      require_undefined(op, "v", v);
      attention_detail::check_dot_sizes(op, D, E);
      break;
    case LuongScore::general:
      c.check("w", w, {"D", "E"});
      require_undefined(op, "v", v);
      break;
    case LuongScore::concat:
      if (!w.defined() || w.dtype() != DType::f32 || w.rank() != 2 || w.dim(1) != D + E)
        throw ShapeError(op + ": 'w' expected (A, D+E=" + std::to_string(D + E) + "), got " +
                         (w.defined() ? w.shape().str() + (w.dtype() == DType::f32 ? "" : " int32")
                                      : std::string("an undefined tensor")));
      A = w.dim(0);
      c.bind("A", A);
      c.check("v", v, {"A"});
      break;
  }
  if (scale.defined()) c.check("scale", scale, {});
  const kernels::Normalizer norm = attention_detail::check_attention_normalizer(op, options.normalizer);
  if (scale.defined() && options.normalizer.kind != NormalizerKind::softmax)
    throw ValueError(op + ": the learned 'scale' is trained through the softmax; it cannot be combined with the " +
                     normalizer_name(options.normalizer.kind) + " normaliser");
  const attention_detail::KeyMask mask = attention_detail::check_key_mask(c, lengths, options.key_padding_mask);
  const float tau = attention_detail::check_temperature(op, options.temperature);
  const attention_detail::WeightDropout drop =
      attention_detail::check_dropout(op, options.dropout, options.training, options.rng);
  const int32_t* len = mask.lengths.i32();
  const float alpha = (scale.defined() ? scale.item() : 1.0f) / tau;

  // Raw scores e (B, T, S), kept when the learned scale needs them.
  Tensor scores = Tensor::empty({B, T, S});
  Tensor qw, pq, pk;  // general: q W (B·T, E); concat: W_q q (B·T, A), W_k k (B, S, A)
  switch (score) {
    case LuongScore::dot:
      kernels::attention_dot_scores_forward(query.f32(), keys.f32(), len, B, T, S, E, scores.f32());
      break;
    case LuongScore::general:
      qw = Tensor::empty({N, E});
      detail::weight_gemm(op.c_str(), w, false, N, E, D, query.f32(), D, w.f32(), E, nullptr, qw.f32(), E);
      kernels::attention_dot_scores_forward(qw.f32(), keys.f32(), len, B, T, S, E, scores.f32());
      break;
    case LuongScore::concat:
      pq = Tensor::empty({N, A});
      pk = Tensor::empty({B, S, A});
      detail::weight_gemm(op.c_str(), w, true, N, A, D, query.f32(), D, w.f32(), D + E, nullptr, pq.f32(), A);
      detail::weight_gemm(op.c_str(), w, true, B * S, A, E, keys.f32(), E, w.f32() + D, D + E, nullptr, pk.f32(), A);
      kernels::attention_additive_scores_forward(pq.f32(), pk.f32(), v.f32(), len, B, T, S, A, scores.f32());
      break;
  }
  const Dims d{B, T, S, E};
  const SoftmaxContext sc = softmax_context(scores, alpha, values, mask, drop, d, q, norm);
  const Tensor weights = sc.weights, used = sc.used, context = sc.context;  // used: after dropout

  AttentionResult result{context, options.need_weights ? used : Tensor()};
  if (!autodiff::needs_grad(query, keys, values, w, v, scale)) return result;

  auto backward = [query, keys, values, lengths = mask.lengths, w, v, scale, scores, qw, pq, pk, weights, used, context,
                   drop, d, D, A, tau, alpha, score, norm]() {
    const int64_t B = d.B, T = d.T, S = d.S, E = d.E, N = B * T;
    const bool want_e = query.requires_grad() || keys.requires_grad() || w.requires_grad() || v.requires_grad() ||
                        scale.requires_grad();
    // z = alpha e:  dz = a (da - Σ a da),  dscale += Σ dz e / τ,  de = alpha dz
    Tensor da;
    Tensor de = attention_detail::softmax_context_backward(weights, used, context, values, lengths, drop, d, 1.0f,
                                                           want_e, &da, norm);
    if (!de.defined()) return;
    if (scale.requires_grad())
      scale.grad_accumulator().f32()[0] += static_cast<float>(
          kernels::attention_softmax_scale_grad(weights.f32(), da.f32(), scores.f32(), lengths.i32(), B, T, S) / tau);
    kernels::attention_scale_inplace(de.f32(), alpha, de.numel());
    float* dquery = grad_or_null(query);
    float* dkeys = grad_or_null(keys);
    switch (score) {
      case LuongScore::dot:
        kernels::attention_dot_scores_backward(query.f32(), keys.f32(), de.f32(), lengths.i32(), B, T, S, E, dquery,
                                               dkeys);
        break;
      case LuongScore::general: {
        // qw = Q W:  dQ += dqw Wᵀ,  dW += Qᵀ dqw
        const bool want_qw = query.requires_grad() || w.requires_grad();
        Tensor dqw = want_qw ? Tensor::zeros({N, E}) : Tensor();
        kernels::attention_dot_scores_backward(qw.f32(), keys.f32(), de.f32(), lengths.i32(), B, T, S, E,
                                               want_qw ? dqw.f32() : nullptr, dkeys);
        if (dquery) kernels::gemm(false, true, N, D, E, 1.0f, dqw.f32(), E, w.f32(), E, 1.0f, dquery, D);
        if (w.requires_grad())
          kernels::gemm(true, false, D, E, N, 1.0f, query.f32(), D, dqw.f32(), E, 1.0f, w.grad_accumulator().f32(), E);
        break;
      }
      case LuongScore::concat: {
        // pq = Q W_qᵀ, pk = K W_kᵀ:  dQ += dpq W_q,  dW_q += dpqᵀ Q,  dK += dpk W_k,  dW_k += dpkᵀ K
        const bool want_pq = query.requires_grad() || w.requires_grad();
        const bool want_pk = keys.requires_grad() || w.requires_grad();
        Tensor dpq = want_pq ? Tensor::zeros({N, A}) : Tensor();
        Tensor dpk = want_pk ? Tensor::zeros({B, S, A}) : Tensor();
        Tensor dv_partial = v.requires_grad() ? Tensor::zeros({B, A}) : Tensor();
        kernels::attention_additive_scores_backward(pq.f32(), pk.f32(), v.f32(), de.f32(), lengths.i32(), B, T, S, A,
                                                    want_pq ? dpq.f32() : nullptr, want_pk ? dpk.f32() : nullptr,
                                                    v.requires_grad() ? dv_partial.f32() : nullptr);
        const int64_t ldw = D + E;
        if (dquery) kernels::gemm(false, false, N, D, A, 1.0f, dpq.f32(), A, w.f32(), ldw, 1.0f, dquery, D);
        if (dkeys) kernels::gemm(false, false, B * S, E, A, 1.0f, dpk.f32(), A, w.f32() + D, ldw, 1.0f, dkeys, E);
        if (w.requires_grad()) {
          float* dw = w.grad_accumulator().f32();
          kernels::gemm(true, false, A, D, N, 1.0f, dpq.f32(), A, query.f32(), D, 1.0f, dw, ldw);
          kernels::gemm(true, false, A, E, B * S, 1.0f, dpk.f32(), A, keys.f32(), E, 1.0f, dw + D, ldw);
        }
        if (v.requires_grad()) kernels::sum_columns_into(dv_partial.f32(), B, A, v.grad_accumulator().f32());
        break;
      }
    }
  };
  attention_detail::record_attention("luong_attention", context, used, options.need_weights, std::move(backward));
  return result;
}

AttentionResult location_attention(const Tensor& query, const Tensor& values, const Tensor& w_a, const Tensor& b_a,
                                   const Tensor& lengths, const LocationOptions& options) {
  const std::string op = "location_attention";
  ShapeContract c(op);
  const attention_detail::QueryShape q = attention_detail::check_query(c, query);
  c.check("values", values, {"B", "S", "E"});
  c.check("w_a", w_a, {"S_max", "D"});
  if (b_a.defined()) c.check("b_a", b_a, {"S_max"});
  const int64_t B = q.B, T = q.T, D = q.D, S = c["S"], E = c["E"], S_max = c["S_max"], N = B * T;
  if (S > S_max)
    throw ValueError(op + ": source length S=" + std::to_string(S) + " exceeds S_max=" + std::to_string(S_max) +
                     " of 'w_a': location attention scores a fixed number of positions; create w_a with S_max >= "
                     "the longest source, or truncate the sources");
  const attention_detail::KeyMask mask = attention_detail::check_key_mask(c, lengths, options.key_padding_mask);
  const float alpha = 1.0f / attention_detail::check_temperature(op, options.temperature);
  const kernels::Normalizer norm = attention_detail::check_attention_normalizer(op, options.normalizer);
  const attention_detail::WeightDropout drop =
      attention_detail::check_dropout(op, options.dropout, options.training, options.rng);

  // e = Q W_a[:S]ᵀ + b_a[:S]                                        // (B·T, S)
  Tensor scores = Tensor::empty({B, T, S});
  detail::weight_gemm("location_attention", w_a, true, N, S, D, query.f32(), D, w_a.f32(), D, nullptr, scores.f32(), S);
  if (b_a.defined()) kernels::attention_add_bias_rows(scores.f32(), b_a.f32(), N, S);
  const Dims d{B, T, S, E};
  const SoftmaxContext sc = softmax_context(scores, alpha, values, mask, drop, d, q, norm);
  const Tensor weights = sc.weights, used = sc.used, context = sc.context;  // used: after dropout

  AttentionResult result{context, options.need_weights ? used : Tensor()};
  if (!autodiff::needs_grad(query, values, w_a, b_a)) return result;

  auto backward = [query, values, w_a, b_a, lengths = mask.lengths, weights, used, context, drop, d, D, alpha, norm]() {
    const int64_t N = d.B * d.T, S = d.S;
    const bool want_e = query.requires_grad() || w_a.requires_grad() || b_a.requires_grad();
    Tensor de = attention_detail::softmax_context_backward(weights, used, context, values, lengths, drop, d, alpha,
                                                           want_e, nullptr, norm);
    if (!de.defined()) return;
    // e = Q W_a[:S]ᵀ + b_a[:S]:  dQ += dE W_a[:S],  dW_a[:S] += dEᵀ Q,  db_a[:S] += Σ_rows dE
    if (query.requires_grad())
      kernels::gemm(false, false, N, D, S, 1.0f, de.f32(), S, w_a.f32(), D, 1.0f, query.grad_accumulator().f32(), D);
    if (w_a.requires_grad())
      kernels::gemm(true, false, S, D, N, 1.0f, de.f32(), S, query.f32(), D, 1.0f, w_a.grad_accumulator().f32(), D);
    if (b_a.requires_grad()) kernels::sum_columns_into(de.f32(), N, S, b_a.grad_accumulator().f32());
  };
  attention_detail::record_attention("location_attention", context, used, options.need_weights, std::move(backward));
  return result;
}

}  // namespace attn
