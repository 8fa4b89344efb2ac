// Luong local attention (local-m, local-p), one fused node per call. The node keeps only
// the window state (starts, counts, softmax and weights, (B·T, K) with K = min(2 D_w + 1, S)),
// the query projection of the general score and, for local-p, tanh(W_p h) and sigmoid(u).
#include "attn/ops/local_attention.h"

#include <algorithm>

#include "attention_common.h"
#include "kernels/blas.h"
#include "kernels/local_attention.h"
#include "weight_gemm.h"

namespace attn {

using attention_detail::grad_or_null;

namespace {

void require_undefined(const std::string& op, const char* name, const Tensor& t, const char* why) {
  if (t.defined()) throw ValueError(op + ": '" + name + "' " + why + "; leave it undefined");
}

std::string shape_or_undefined(const Tensor& t) {
  if (!t.defined()) return "an undefined tensor";
  return t.shape().str() + (t.dtype() == DType::i32 ? " int32" : "");
}

// local-m centres (B·T) from options.positions (see LocalOptions) or p_t = t.
Tensor monotonic_centres(const std::string& op, const Tensor& positions, const attention_detail::QueryShape& q,
                         int64_t S) {
  const int64_t B = q.B, T = q.T;
  Tensor centres = Tensor::empty({B * T}, DType::i32);
  int32_t* c = centres.i32();
  if (!positions.defined()) {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t) c[b * T + t] = static_cast<int32_t>(t);
    return centres;
  }
  bool shared = false, valid = false;
  if (q.block) {
    if (positions.rank() == 1 && positions.dim(0) == T) valid = shared = true;
    if (positions.rank() == 2 && positions.dim(0) == B && positions.dim(1) == T) valid = true;
  } else {
    if (positions.rank() == 1 && positions.dim(0) == 1) valid = shared = true;
    if (positions.rank() == 1 && positions.dim(0) == B) valid = true;
    if (positions.rank() == 2 && positions.dim(0) == B && positions.dim(1) == 1) valid = true;
  }
  if (!valid || positions.dtype() != DType::i32) {
    const std::string expected =
        q.block ? "(T=" + std::to_string(T) + ") or (B=" + std::to_string(B) + ", T=" + std::to_string(T) + ")"
                : "(1), (B=" + std::to_string(B) + ") or (B=" + std::to_string(B) + ", 1) for a one-step query";
    throw ShapeError(op + ": 'positions' expected int32 " + expected + ", got " +
                     (positions.dtype() == DType::i32 || !positions.defined() ? shape_or_undefined(positions)
                                                                              : positions.shape().str() + " float32"));
  }
  const int32_t* p = positions.i32();
  for (int64_t i = 0; i < positions.numel(); ++i)
    if (p[i] < 0 || p[i] >= S)
      throw ValueError(op + ": 'positions' value " + std::to_string(p[i]) + " at flat index " + std::to_string(i) +
                       " is out of range [0, S=" + std::to_string(S) + ")");
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) c[b * T + t] = shared ? p[t] : p[b * T + t];
  return centres;
}

}  // namespace

AttentionResult local_attention(const Tensor& query, const Tensor& keys, const Tensor& values, const Tensor& lengths,
                                const LocalOptions& options) {
  if (options.mode != LocalMode::monotonic && options.mode != LocalMode::predictive)
    throw ValueError("local_attention: unknown mode " + std::to_string(static_cast<int>(options.mode)));
  const bool predictive = options.mode == LocalMode::predictive;
  const std::string op = predictive ? "local_attention(local-p)" : "local_attention(local-m)";
  ShapeContract c(op);
  const attention_detail::QueryShape q = attention_detail::check_query_keys_values(c, query, keys, values);
  const int64_t B = q.B, T = q.T, D = q.D, S = c["S"], E = c["E"], N = B * T;
  const Tensor& w = options.w;
  const LuongScore score = options.score;
  switch (score) {
    case LuongScore::dot:
      require_undefined(op, "w", w, "is not used by the dot score");
      attention_detail::check_dot_sizes(op, D, E);
      break;
    case LuongScore::general:
      c.check("w", w, {"D", "E"});
      break;
    case LuongScore::concat:
      throw ValueError(op + ": the concat score is not supported by local attention; use dot or general");
    default:
      throw ValueError(op + ": unknown score function " + std::to_string(static_cast<int>(score)));
  }
  const int64_t window = options.window;
  if (window < (predictive ? 1 : 0))
    throw ValueError(op +
                     ": window must be >= " + (predictive ? "1 for local-p (sigma = window / 2)" : std::string("0")) +
                     ", got " + std::to_string(window) +
                     ": it is Luong's half-width D, the window is [p_t - D, p_t + D] (Luong et al. use D = 10)");
  const Tensor& w_p = options.w_p;
  const Tensor& v_p = options.v_p;
  int64_t A = 0;
  if (predictive) {
    require_undefined(op, "positions", options.positions, "is only used by local-m (the position is predicted)");
    if (!w_p.defined() || !v_p.defined())
      throw ShapeError(op + ": '" + (w_p.defined() ? "v_p" : "w_p") + "' expected " +
                       (w_p.defined() ? "(A=" + std::to_string(w_p.rank() == 2 ? w_p.dim(0) : 0) + ")"
                                      : "(A, D=" + std::to_string(D) + ")") +
                       ", got an undefined tensor: local-p predicts p_t = L * sigmoid(v_p . tanh(W_p h_t)) and needs "
                       "options.w_p (A, D) and options.v_p (A)");
    c.check("w_p", w_p, {"A", "D"});
    c.check("v_p", v_p, {"A"});
    A = c["A"];
  } else {
    require_undefined(op, "w_p", w_p, "is only used by local-p");
    require_undefined(op, "v_p", v_p, "is only used by local-p");
  }
  const attention_detail::KeyMask mask = attention_detail::check_key_mask(c, lengths, options.key_padding_mask);
  const float alpha = 1.0f / attention_detail::check_temperature(op, options.temperature);
  const attention_detail::WeightDropout drop =
      attention_detail::check_dropout(op, options.dropout, options.training, options.rng);
  const float drop_p = drop.on ? drop.p : 0.0f;
  const uint64_t drop_seed = drop.seed;
  // σ = D_w / 2:  1 / (2σ²) = 2 / D_w²
  const float gauss = predictive ? 2.0f / static_cast<float>(window * window) : 0.0f;
  const int64_t K = std::max<int64_t>(1, std::min<int64_t>(2 * window + 1, S));

  // Content query rows: q (dot) or q W (general)                      // (B·T, E)
  Tensor qw;
  if (score == LuongScore::general) {
    qw = Tensor::empty({N, E});
    detail::weight_gemm("local_attention", w, false, N, E, D, query.f32(), D, w.f32(), E, nullptr, qw.f32(), E);
  } else {
    qw = query.detach();
  }
  // Window centres: t / positions (local-m), min(floor(p_t), L_b − 1) (local-p).
  Tensor centres, h, sg, p;
  if (predictive) {
    h = Tensor::empty({N, A});  // W_p h_t, then tanh of it, in place      // (B·T, A)
    sg = Tensor::empty({N});
    p = Tensor::empty({N});
    centres = Tensor::empty({N}, DType::i32);
    detail::weight_gemm("local_attention", w_p, true, N, A, D, query.f32(), D, w_p.f32(), D, nullptr, h.f32(), A);
    kernels::local_attention_position_forward(h.f32(), v_p.f32(), mask.lengths.i32(), B, T, A, sg.f32(), p.f32(),
                                              centres.i32());
  } else {
    centres = monotonic_centres(op, options.positions, q, S);
  }
  Tensor starts = Tensor::empty({N}, DType::i32);
  Tensor counts = Tensor::empty({N}, DType::i32);
  kernels::local_attention_windows(centres.i32(), mask.lengths.i32(), B, T, window, starts.i32(), counts.i32());

  Tensor soft = Tensor::empty({N, K});
  Tensor win = Tensor::empty({N, K});
  Tensor context = Tensor::empty(q.out(E));
  kernels::LocalAttentionProblem problem{.B = B,
                                         .T = T,
                                         .S = S,
                                         .E = E,
                                         .K = K,
                                         .q = qw.f32(),
                                         .keys = keys.f32(),
                                         .values = values.f32(),
                                         .starts = starts.i32(),
                                         .counts = counts.i32(),
                                         .p = predictive ? p.f32() : nullptr,
                                         .keep = mask.keep_ptr(),
                                         .alpha = alpha,
                                         .gauss = gauss,
                                         .drop_p = drop_p,
                                         .drop_seed = drop_seed};
  kernels::local_attention_forward(problem, soft.f32(), win.f32(), context.f32());
  Tensor weights;  // dense, after dropout
  if (options.need_weights) {
    weights = Tensor::zeros(q.out(S));
    kernels::local_attention_scatter_weights(win.f32(), starts.i32(), counts.i32(), drop_p, drop_seed, N, S, K,
                                             weights.f32());
  }

  AttentionResult result{context, weights};
  if (!autodiff::needs_grad(query, keys, values, w, w_p, v_p)) return result;

  // The backward needs no mask: masked slots carry zero weight (and the mask is not kept alive).
  kernels::LocalAttentionProblem backward_problem = problem;
  backward_problem.keep = nullptr;
  auto backward = [query, keys, values, lengths = mask.lengths, w, w_p, v_p, qw, h, sg, p, starts, counts, soft, win,
                   context, weights, B, T, E, D, A, K, score, predictive, problem = backward_problem]() {
    const int64_t N = B * T;
    const float* dcontext = context.has_grad() ? context.grad().f32() : nullptr;
    const float* dweights = weights.defined() && weights.has_grad() ? weights.grad().f32() : nullptr;
    if (!dcontext && !dweights) return;
    const bool general = score == LuongScore::general;
    // Content query rows: dot: the query's own gradient; general: dqw, then through q W.
    const bool want_qw = general && (query.requires_grad() || w.requires_grad());
    Tensor dqw = want_qw ? Tensor::zeros({N, E}) : Tensor();
    float* dq = general ? (want_qw ? dqw.f32() : nullptr) : grad_or_null(query);
    const bool want_p = predictive && (query.requires_grad() || w_p.requires_grad() || v_p.requires_grad());
    Tensor dp = want_p ? Tensor::zeros({N}) : Tensor();
    Tensor scratch = Tensor::empty({N, K});
    kernels::local_attention_backward(
        problem, soft.f32(), win.f32(), dcontext, dweights, scratch.f32(),
        {.dq = dq, .dkeys = grad_or_null(keys), .dvalues = grad_or_null(values), .dp = want_p ? dp.f32() : nullptr});
    // qw = Q W:  dQ += dqw Wᵀ,  dW += Qᵀ dqw
    if (want_qw) {
      if (query.requires_grad())
        kernels::gemm(false, true, N, D, E, 1.0f, dqw.f32(), E, w.f32(), E, 1.0f, query.grad_accumulator().f32(), D);
      if (w.requires_grad())
        kernels::gemm(true, false, D, E, N, 1.0f, query.f32(), D, dqw.f32(), E, 1.0f, w.grad_accumulator().f32(), E);
    }
    if (!want_p) return;
    // p = L σ(v_p · tanh(Q W_pᵀ)):  du, dpre from the kernel, then
    //   dQ += dpre W_p,  dW_p += dpreᵀ Q,  dv_p += Σ_r du_r h_r
    Tensor du = Tensor::zeros({N});
    Tensor dpre = Tensor::zeros({N, A});
    kernels::local_attention_position_backward(h.f32(), v_p.f32(), sg.f32(), dp.f32(), lengths.i32(), B, T, A, du.f32(),
                                               dpre.f32());
    if (query.requires_grad())
      kernels::gemm(false, false, N, D, A, 1.0f, dpre.f32(), A, w_p.f32(), D, 1.0f, query.grad_accumulator().f32(), D);
    if (w_p.requires_grad())
      kernels::gemm(true, false, A, D, N, 1.0f, dpre.f32(), A, query.f32(), D, 1.0f, w_p.grad_accumulator().f32(), D);
    if (v_p.requires_grad())
      kernels::gemm(false, false, 1, A, N, 1.0f, du.f32(), N, h.f32(), A, 1.0f, v_p.grad_accumulator().f32(), A);
  };
  attention_detail::record_attention(predictive ? "local_attention(local-p)" : "local_attention(local-m)", context,
                                     weights, options.need_weights, std::move(backward));
  return result;
}

}  // namespace attn
