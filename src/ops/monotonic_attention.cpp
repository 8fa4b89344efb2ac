// Monotonic attention and MoChA (attn/ops/monotonic.h): the energy is the additive score's fused
// kernel plus the offset r; the alignments are this file's nodes over kernels/monotonic.h; the
// online inference step runs kernels/monotonic_online.h.
#include <fmt/format.h>

#include "attention_common.h"
#include "attn/ops/monotonic.h"
#include "kernels/monotonic.h"
#include "kernels/monotonic_online.h"

namespace attn {
namespace {

// Checks one energy's arguments (named prefix + "projected_keys", ... in errors; the selection
// and MoChA's chunk share B, S, A and D); its projected query W_q q + b (B, A) into u.
kernels::OnlineEnergy online_energy(ShapeContract& c, const std::string& prefix, const MonotonicEnergy& x,
                                    const Tensor& query, Tensor& u) {
  c.check(prefix + "projected_keys", x.projected_keys, {"B", "S", "A"});
  c.check(prefix + "w_q", x.w_q, {"A", "D"}).check(prefix + "bias", x.bias, {"A"}).check(prefix + "v", x.v, {"A"});
  if (x.r.defined()) c.check(prefix + "r", x.r, {"1"});
  u = attention_detail::additive_query_forward(query, x.w_q, x.bias, c["B"], c["D"], c["A"]);
  return {u.f32(), x.projected_keys.f32(), x.v.f32(), x.r.defined() ? x.r.f32() : nullptr};
}

}  // namespace

Tensor additive_energy(const Tensor& query, const Tensor& projected_keys, const Tensor& w_q, const Tensor& bias,
                       const Tensor& v, const Tensor& r, const Tensor& lengths) {
  ShapeContract c("additive_energy");
  c.check("query", query, {"B", "D"});
  c.check("projected_keys", projected_keys, {"B", "S", "A"});
  c.check("w_q", w_q, {"A", "D"}).check("bias", bias, {"A"}).check("v", v, {"A"});
  if (r.defined()) c.check("r", r, {"1"});
  const int64_t B = c["B"], D = c["D"], S = c["S"], A = c["A"];
  attention_detail::check_lengths(c, lengths, S);
  const int32_t* len = lengths.i32();
  const Tensor u = attention_detail::additive_query_forward(query, w_q, bias, B, D, A);  // (B, A)
  Tensor e = Tensor::zeros({B, S});
  kernels::attention_additive_scores_forward(u.f32(), projected_keys.f32(), v.f32(), len, B, 1, S, A, e.f32());
  if (r.defined())
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < len[b]; ++s) e.f32()[b * S + s] += r.f32()[0];
  if (!autodiff::needs_grad(query, projected_keys, w_q, bias, v, r)) return e;
  autodiff::record("additive_energy", {e}, [query, projected_keys, w_q, bias, v, r, lengths, u, e, B, D, S, A]() {
    const float* de = e.grad().f32();
    const int32_t* len = lengths.i32();
    const bool want_u = query.requires_grad() || w_q.requires_grad() || bias.requires_grad();
    Tensor du = want_u ? Tensor::zeros({B, A}) : Tensor();
    Tensor dv_partial = v.requires_grad() ? Tensor::zeros({B, A}) : Tensor();
    kernels::attention_additive_scores_backward(
        u.f32(), projected_keys.f32(), v.f32(), de, len, B, 1, S, A, want_u ? du.f32() : nullptr,
        attention_detail::grad_or_null(projected_keys), v.requires_grad() ? dv_partial.f32() : nullptr);
    if (want_u) attention_detail::additive_query_backward(du, query, w_q, bias, B, D, A);
    if (v.requires_grad()) kernels::sum_columns_into(dv_partial.f32(), B, A, v.grad_accumulator().f32());
    if (r.requires_grad()) {  // dr += Σ_{b, s<L_b} de
      double sum = 0.0;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t s = 0; s < len[b]; ++s) sum += de[b * S + s];
      r.grad_accumulator().f32()[0] += static_cast<float>(sum);
    }
  });
  return e;
}

Tensor monotonic_alignment(const Tensor& energies, const Tensor& prev, const Tensor& lengths) {
  ShapeContract c("monotonic_alignment");
  c.check("energies", energies, {"B", "S"}).check("prev", prev, {"B", "S"});
  const int64_t B = c["B"], S = c["S"];
  attention_detail::check_lengths(c, lengths, S);
  Tensor alpha = Tensor::empty({B, S});
  kernels::monotonic_alignment_forward(energies.f32(), prev.f32(), lengths.i32(), B, S, alpha.f32());
  if (autodiff::needs_grad(energies, prev)) {
    autodiff::record("monotonic_alignment", {alpha}, [energies, prev, lengths, alpha, B, S]() {
      kernels::monotonic_alignment_backward(energies.f32(), prev.f32(), alpha.grad().f32(), lengths.i32(), B, S,
                                            attention_detail::grad_or_null(energies),
                                            attention_detail::grad_or_null(prev));
    });
  }
  return alpha;
}

Tensor mocha_chunk_attention(const Tensor& alpha, const Tensor& chunk_energies, const Tensor& lengths, int64_t chunk) {
  ShapeContract c("mocha_chunk_attention");
  c.check("alpha", alpha, {"B", "S"}).check("chunk_energies", chunk_energies, {"B", "S"});
  const int64_t B = c["B"], S = c["S"], W = chunk;
  attention_detail::check_lengths(c, lengths, S);
  if (W < 1) throw ValueError(fmt::format("mocha_chunk_attention: the chunk width W must be >= 1, got {}", W));
  Tensor beta = Tensor::empty({B, S});
  kernels::mocha_chunk_forward(alpha.f32(), chunk_energies.f32(), lengths.i32(), B, S, W, beta.f32());
  if (autodiff::needs_grad(alpha, chunk_energies)) {
    autodiff::record("mocha_chunk_attention", {beta}, [alpha, chunk_energies, lengths, beta, B, S, W]() {
      kernels::mocha_chunk_backward(alpha.f32(), chunk_energies.f32(), beta.grad().f32(), lengths.i32(), B, S, W,
                                    attention_detail::grad_or_null(alpha),
                                    attention_detail::grad_or_null(chunk_energies));
    });
  }
  return beta;
}

Tensor monotonic_select(const Tensor& energies, const Tensor& lengths, const Tensor& start) {
  ShapeContract c("monotonic_select");
  c.check("energies", energies, {"B", "S"});
  c.check("start", start, {"B"}, DType::i32);
  const int64_t B = c["B"], S = c["S"];
  attention_detail::check_lengths(c, lengths, S);
  for (int64_t b = 0; b < B; ++b)
    if (start.i32()[b] < 0)
      throw ValueError(
          fmt::format("monotonic_select: 'start' value {} at batch index {} is negative", start.i32()[b], b));
  Tensor selected = Tensor::empty({B}, DType::i32);
  kernels::monotonic_select(energies.f32(), lengths.i32(), start.i32(), B, S, selected.i32());
  return selected;
}

Tensor monotonic_hard_weights(const Tensor& selected, const Tensor& chunk_energies, int64_t chunk) {
  ShapeContract c("monotonic_hard_weights");
  c.check("selected", selected, {"B"}, DType::i32).check("chunk_energies", chunk_energies, {"B", "S"});
  const int64_t B = c["B"], S = c["S"];
  if (chunk < 1) throw ValueError(fmt::format("monotonic_hard_weights: the chunk width W must be >= 1, got {}", chunk));
  for (int64_t b = 0; b < B; ++b)
    if (selected.i32()[b] < -1 || selected.i32()[b] >= S)
      throw ValueError(
          fmt::format("monotonic_hard_weights: 'selected' value {} at batch index {} is outside [-1, S={})",
                      selected.i32()[b], b, S));
  Tensor w = Tensor::empty({B, S});
  kernels::mocha_hard_weights(chunk_energies.f32(), selected.i32(), B, S, chunk, w.f32());
  return w;
}

MonotonicOnlineResult monotonic_online_step(const Tensor& query, const Tensor& values, const Tensor& lengths,
                                            const Tensor& start, const MonotonicOnlineOptions& options) {
  ShapeContract c("monotonic_online_step");
  c.check("query", query, {"B", "D"});
  Tensor u_select, u_chunk;  // (B, A) each
  const kernels::OnlineEnergy select = online_energy(c, "", options.selection, query, u_select);
  const bool mocha = options.chunk.projected_keys.defined();
  const kernels::OnlineEnergy chunk =
      mocha ? online_energy(c, "chunk_", options.chunk, query, u_chunk) : kernels::OnlineEnergy{};
  c.check("values", values, {"B", "S", "E"});
  c.check("start", start, {"B"}, DType::i32);
  const int64_t B = c["B"], S = c["S"], A = c["A"], E = c["E"];
  attention_detail::check_lengths(c, lengths, S);
  for (int64_t b = 0; b < B; ++b)
    if (start.i32()[b] < 0)
      throw ValueError(
          fmt::format("monotonic_online_step: 'start' value {} at batch index {} is negative", start.i32()[b], b));
  const int64_t W = mocha ? options.chunk_width : 1;
  if (W < 1) throw ValueError(fmt::format("monotonic_online_step: the chunk width W must be >= 1, got {}", W));
  MonotonicOnlineResult r{Tensor::empty({B}, DType::i32), Tensor::empty({B, E}),
                          options.need_weights ? Tensor::empty({B, S}) : Tensor()};
  Tensor scratch = Tensor::empty({B, W});
  kernels::monotonic_online_forward(select, chunk, values.f32(), lengths.i32(), start.i32(), B, S, A, E, W,
                                    r.selected.i32(), r.context.f32(), options.need_weights ? r.weights.f32() : nullptr,
                                    scratch.f32());
  return r;
}

}  // namespace attn
