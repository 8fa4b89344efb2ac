// Bahdanau (additive) attention, one fused node:
//   u_t = W_q q_t + b                           (B·T, A)  one GEMM for every query row
//   e_{t,s} = v_effᵀ tanh(u_t + k̃_s)            (B, T, S) never materialising (B, T, S, A)
//   a_t = masked softmax(e_t / τ) (or smoothing: σ(e_t / τ) normalised),  c_t = Σ_s a_{t,s} values_s
// with v_eff = v, or g · v / ‖v‖ when normalized. The backward recomputes the tanh row by
// row (memory O(B·T·S) for the weights, O(B·T·A) for u).
#include <cmath>
#include <string>

#include "attention_common.h"
#include "attn/ops/attention.h"
#include "kernels/blas.h"
#include "kernels/normalizer.h"
#include "kernels/reduce.h"
#include "weight_gemm.h"

namespace attn {

using attention_detail::Dims;
using attention_detail::grad_or_null;

Tensor additive_project_keys(const Tensor& keys, const Tensor& w_k) {
  ShapeContract c("additive_project_keys");
  c.check("keys", keys, {"B", "S", "E"}).check("w_k", w_k, {"A", "E"});
  const int64_t rows = c["B"] * c["S"], E = c["E"], A = c["A"];
  Tensor projected = Tensor::empty({c["B"], c["S"], A});  // (B, S, A)
  detail::weight_gemm("additive_project_keys", w_k, true, rows, A, E, keys.f32(), E, w_k.f32(), E, nullptr,
                      projected.f32(), A);
  if (autodiff::needs_grad(keys, w_k)) {
    // P = K W_kᵀ:  dK += dP W_k,  dW_k += dPᵀ K
    autodiff::record("additive_project_keys", {projected}, [keys, w_k, projected, rows, E, A]() {
      const float* dp = projected.grad().f32();
      if (keys.requires_grad())
        kernels::gemm(false, false, rows, E, A, 1.0f, dp, A, w_k.f32(), E, 1.0f, keys.grad_accumulator().f32(), E);
      if (w_k.requires_grad())
        kernels::gemm(true, false, A, E, rows, 1.0f, dp, A, keys.f32(), E, 1.0f, w_k.grad_accumulator().f32(), E);
    });
  }
  return projected;
}

AttentionResult additive_attention(const Tensor& query, const Tensor& projected_keys, const Tensor& values,
                                   const Tensor& w_q, const Tensor& bias, const Tensor& v, const Tensor& lengths,
                                   const AdditiveOptions& options) {
  const std::string op = "additive_attention";
  ShapeContract c(op);
  const attention_detail::QueryShape q = attention_detail::check_query(c, query);
  c.check("projected_keys", projected_keys, {"B", "S", "A"});
  c.check("values", values, {"B", "S", "E"});
  c.check("w_q", w_q, {"A", "D"});
  c.check("bias", bias, {"A"});
  c.check("v", v, {"A"});
  const Tensor& g = options.g;
  if (options.normalize) {
    if (!g.defined()) throw ValueError(op + ": normalize = true needs the learned scalar 'g'");
    c.check("g", g, {});
  } else if (g.defined()) {
    throw ValueError(op + ": 'g' is only used when normalize = true; leave it undefined");
  }
  const int64_t B = q.B, T = q.T, D = q.D, S = c["S"], E = c["E"], A = c["A"], N = B * T;
  const attention_detail::KeyMask mask = attention_detail::check_key_mask(c, lengths, options.key_padding_mask);
  const float alpha = 1.0f / attention_detail::check_temperature(op, options.temperature);
  const attention_detail::WeightDropout drop =
      attention_detail::check_dropout(op, options.dropout, options.training, options.rng);
  const bool normalize = options.normalize;

  // v_eff = g v / ‖v‖ (normalized) or v.
  Tensor v_eff = v;
  if (normalize) {
    double sq = 0.0;
    for (int64_t a = 0; a < A; ++a) sq += static_cast<double>(v.f32()[a]) * v.f32()[a];
    if (!(sq > 0.0)) throw ValueError(op + ": normalize = true needs a nonzero 'v' (its norm is 0)");
    v_eff = Tensor::empty({A});
    const double factor = g.item() / std::sqrt(sq);
    for (int64_t a = 0; a < A; ++a) v_eff.f32()[a] = static_cast<float>(factor * v.f32()[a]);
  }

  // u = Q W_qᵀ + b                                                   // (B·T, A)
  const Tensor u = attention_detail::additive_query_forward(query, w_q, bias, N, D, A);

  const Dims d{B, T, S, E};
  const bool smoothing = options.smoothing;
  Tensor scores = Tensor::empty(q.out(S));  // raw scores; the softmax writes the weights over them
  kernels::attention_additive_scores_forward(u.f32(), projected_keys.f32(), v_eff.f32(), mask.lengths.i32(), B, T, S, A,
                                             scores.f32());
  const kernels::Normalizer norm = attention_detail::check_attention_normalizer(op, options.normalizer, smoothing);
  // The softmax writes the weights over the scores; the sigmoid's backward reads the scores and
  // the sort-based normalisers sort in the weights, so those get their own.
  const bool in_place = norm.kind == kernels::NormalizerKind::softmax;
  Tensor weights = in_place ? scores : Tensor::empty(q.out(S));
  Tensor context = Tensor::empty(q.out(E));
  Tensor used;  // the weights after dropout (== weights without)
  attention_detail::softmax_context_forward(scores, alpha, values, mask, drop, d, weights, used, context, norm);

  AttentionResult result{context, options.need_weights ? used : Tensor()};
  if (!autodiff::needs_grad(query, projected_keys, values, w_q, bias, v, g)) return result;

  const Tensor lengths_ = mask.lengths;
  const Tensor smoothing_scores = smoothing ? scores : Tensor();
  auto backward = [query, projected_keys, values, w_q, bias, v, g, lengths = lengths_, u, v_eff, weights, used, context,
                   drop, d, D, A, alpha, normalize, norm, smoothing_scores]() {
    const int64_t B = d.B, T = d.T, S = d.S, N = B * T;
    const bool want_u = query.requires_grad() || w_q.requires_grad() || bias.requires_grad();
    const bool want_k = projected_keys.requires_grad();
    const bool want_v = v.requires_grad() || g.requires_grad();
    // de_{t,s} = (1/τ) a_{t,s} (da_{t,s} - Σ_j a_{t,j} da_{t,j}),  da = dc · values (+ dweights)
    Tensor de = attention_detail::softmax_context_backward(weights, used, context, values, lengths, drop, d, alpha,
                                                           want_u || want_k || want_v, nullptr, norm, smoothing_scores);
    if (!de.defined()) return;
    Tensor du = want_u ? Tensor::zeros({N, A}) : Tensor();
    Tensor dv_partial = want_v ? Tensor::zeros({B, A}) : Tensor();
    kernels::attention_additive_scores_backward(u.f32(), projected_keys.f32(), v_eff.f32(), de.f32(), lengths.i32(), B,
                                                T, S, A, want_u ? du.f32() : nullptr, grad_or_null(projected_keys),
                                                want_v ? dv_partial.f32() : nullptr);
    if (want_u) attention_detail::additive_query_backward(du, query, w_q, bias, N, D, A);
    if (!want_v) return;
    Tensor dv_eff = Tensor::zeros({A});  // Σ_b in order: independent of the thread count
    kernels::sum_columns_into(dv_partial.f32(), B, A, dv_eff.f32());
    if (!normalize) {
      kernels::sum_columns_into(dv_eff.f32(), 1, A, v.grad_accumulator().f32());
      return;
    }
    // v_eff = g v̂, v̂ = v / ‖v‖:  dg += v̂ · dv_eff,  dv += (g / ‖v‖) (dv_eff - v̂ (v̂ · dv_eff))
    const float* vp = v.f32();
    const float* dve = dv_eff.f32();
    double sq = 0.0, proj = 0.0;
    for (int64_t a = 0; a < A; ++a) sq += static_cast<double>(vp[a]) * vp[a];
    const double norm = std::sqrt(sq);
    for (int64_t a = 0; a < A; ++a) proj += vp[a] / norm * dve[a];
    if (g.requires_grad()) g.grad_accumulator().f32()[0] += static_cast<float>(proj);
    if (v.requires_grad()) {
      float* dv = v.grad_accumulator().f32();
      const double factor = g.item() / norm;
      for (int64_t a = 0; a < A; ++a) dv[a] += static_cast<float>(factor * (dve[a] - vp[a] / norm * proj));
    }
  };
  attention_detail::record_attention("additive_attention", context, used, options.need_weights, std::move(backward));
  return result;
}

AdditiveGradients additive_attention_backward(const Tensor& query, const Tensor& pk, const Tensor& values,
                                              const Tensor& w_q, const Tensor& bias, const Tensor& v,
                                              const Tensor& lengths_in, const Tensor& weights, const Tensor& dcontext,
                                              const Tensor& dweights) {
  auto expect = [](bool ok, const std::string& what) {
    if (!ok) throw ShapeError("additive_attention_backward: " + what);
  };
  expect(pk.rank() == 3 && values.rank() == 3 && w_q.rank() == 2, "projected_keys / values / w_q ranks");
  const int64_t B = pk.dim(0), S = pk.dim(1), A = pk.dim(2), E = values.dim(2), D = w_q.dim(1);
  expect(query.rank() >= 2 && query.dim(0) == B && query.dim(-1) == D && query.numel() % (B * D) == 0, "query shape");
  const int64_t T = query.numel() / (B * D), N = B * T;
  expect(values.dim(0) == B && values.dim(1) == S && w_q.dim(0) == A && bias.numel() == A && v.numel() == A,
         "values / w_q / bias / v shapes");
  expect(weights.numel() == N * S && dcontext.numel() == N * E, "weights / dcontext sizes");
  expect(!dweights.defined() || dweights.numel() == N * S, "dweights size");
  Tensor lengths = lengths_in.defined() ? lengths_in : Tensor::empty({B}, DType::i32);  // every row has S keys
  if (!lengths_in.defined())
    for (int64_t b = 0; b < B; ++b) lengths.i32()[b] = static_cast<int32_t>(S);
  expect(lengths.dtype() == DType::i32 && lengths.numel() == B, "lengths must be int32 (B)");
  for (int64_t b = 0; b < B; ++b) expect(lengths.i32()[b] >= 0 && lengths.i32()[b] <= S, "lengths must be in [0, S]");

  // u = Q W_qᵀ + b                                                   // (N, A)
  Tensor u = Tensor::empty({N, A});
  kernels::gemm(false, true, N, A, D, 1.0f, query.f32(), D, w_q.f32(), D, 0.0f, u.f32(), A);
  kernels::attention_add_bias_rows(u.f32(), bias.f32(), N, A);
  // da = dweights + dc · values;  dvalues += Σ_t a dc
  Tensor da = dweights.defined() ? dweights.clone() : Tensor::zeros({N * S});
  AdditiveGradients g;
  g.values = Tensor::zeros(values.shape());
  kernels::attention_context_backward(weights.f32(), values.f32(), dcontext.f32(), lengths.i32(), B, T, S, E, da.f32(),
                                      g.values.f32());
  Tensor de = Tensor::zeros({N * S});
  kernels::normalizer_backward(kernels::Normalizer{},
                               kernels::NormalizerRows{.rows = N, .n = S, .group = T, .extents = lengths.i32()},
                               nullptr, weights.f32(), da.f32(), de.f32());
  Tensor du = Tensor::zeros({N, A}), dv_partial = Tensor::zeros({B, A});
  g.projected_keys = Tensor::zeros(pk.shape());
  kernels::attention_additive_scores_backward(u.f32(), pk.f32(), v.f32(), de.f32(), lengths.i32(), B, T, S, A, du.f32(),
                                              g.projected_keys.f32(), dv_partial.f32());
  // u = Q W_qᵀ + b:  dQ = dU W_q,  dW_q = dUᵀ Q,  db = Σ_rows dU;  dv = Σ_b dv_partial (in order)
  g.query = Tensor::empty(query.shape());
  g.w_q = Tensor::empty(w_q.shape());
  g.bias = Tensor::zeros(bias.shape());
  g.v = Tensor::zeros(v.shape());
  kernels::gemm(false, false, N, D, A, 1.0f, du.f32(), A, w_q.f32(), D, 0.0f, g.query.f32(), D);
  kernels::gemm(true, false, A, D, N, 1.0f, du.f32(), A, query.f32(), D, 0.0f, g.w_q.f32(), D);
  kernels::sum_columns_into(du.f32(), N, A, g.bias.f32());
  kernels::sum_columns_into(dv_partial.f32(), B, A, g.v.f32());
  return g;
}

}  // namespace attn
