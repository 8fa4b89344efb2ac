#include "attn/ops/sdpa.h"

#include <cmath>
#include <string>

#include "attn/autodiff/tape.h"
#include "attn/number_format.h"
#include "attn/ops/elementwise.h"
#include "attn/ops/linear.h"
#include "kernels/elementwise.h"
#include "kernels/sdpa.h"

namespace attn {
namespace {

// The keep-mask (B, H, T, S) of the key lengths / padding mask and the causal mask.
Tensor keep_mask(const SdpaOptions& o, int64_t B, int64_t H, int64_t T, int64_t S) {
  Tensor keep = Tensor::empty({B, H, T, S}, DType::i32);
  int32_t* m = keep.i32();
  const int64_t shift = o.causal_align == CausalAlign::lower_right ? S - T : 0;  // query t sees s <= t + shift
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t s = 0; s < S; ++s) {
          bool kept = !o.key_lengths.defined() || s < o.key_lengths.i32()[b];
          kept = kept && (!o.key_padding_mask.defined() || o.key_padding_mask.i32()[b * S + s] != 0);
          kept = kept && (!o.causal || s <= t + shift);
          *m++ = kept ? 1 : 0;
        }
  return keep;
}

// The sparse normalisers' path: weights = normalise(q kᵀ · scale, masks), out = weights v.
SdpaResult sdpa_normalized(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaOptions& o, float scale,
                           int64_t B, int64_t H, int64_t T, int64_t S, int64_t Dh, int64_t Dv) {
  check_normalizer("sdpa", o.normalizer);
  if (o.bias.defined())
    throw ValueError(std::string("sdpa: a bias is added by the fused softmax kernel only; the ") +
                     normalizer_name(o.normalizer.kind) + " normaliser takes none");
  const Tensor scores = attn::scale(bmm(q.reshape({B * H, T, Dh}), k.reshape({B * H, S, Dh}), {.transpose_b = true}),
                                    scale);  // (B·H, T, S)
  const Tensor weights = normalize(scores.reshape({B, H, T, S}), o.normalizer, keep_mask(o, B, H, T, S));
  const Tensor out = bmm(weights.reshape({B * H, T, S}), v.reshape({B * H, S, Dv})).reshape({B, H, T, Dv});
  return {out, o.need_weights ? weights : Tensor()};
}

}  // namespace

SdpaResult sdpa(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaOptions& options) {
  ShapeContract c("sdpa");
  c.check("q", q, {"B", "H", "T", "Dh"});
  c.check("k", k, {"B", "H", "S", "Dh"});
  c.check("v", v, {"B", "H", "S", "Dv"});
  const int64_t B = c["B"], H = c["H"], T = c["T"], S = c["S"], Dh = c["Dh"], Dv = c["Dv"];

  if (options.key_lengths.defined() && options.key_padding_mask.defined())
    throw ValueError("sdpa: key_lengths and key_padding_mask are exclusive; give one of them, not both");
  if (options.key_lengths.defined()) {
    c.check("key_lengths", options.key_lengths, {"B"}, DType::i32);
    check_length_values("sdpa", "key_lengths", options.key_lengths, 0, "S", S);
  }
  if (options.key_padding_mask.defined()) c.check("key_padding_mask", options.key_padding_mask, {"B", "S"}, DType::i32);
  int64_t bias_head_stride = 0;
  if (options.bias.defined()) {
    const Tensor& b = options.bias;
    const auto& d = b.shape().dims();
    const bool per_head = (d.size() == 3 && d[0] == B * H && d[1] == T && d[2] == S) ||
                          (d.size() == 4 && d[0] == B && d[1] == H && d[2] == T && d[3] == S);
    if (b.dtype() != DType::f32 || !(per_head || (d.size() == 2 && d[0] == T && d[1] == S)))
      throw ShapeError("sdpa: 'bias' expected float32 (T=" + std::to_string(T) + ", S=" + std::to_string(S) +
                       "), (B·H=" + std::to_string(B * H) + ", T, S) or (B=" + std::to_string(B) +
                       ", H=" + std::to_string(H) + ", T, S), got " + b.shape().str() + " " + dtype_name(b.dtype()));
    if (per_head) bias_head_stride = T * S;
  }
  if (!(options.temperature > 0.0f) || !std::isfinite(options.temperature))
    throw ValueError("sdpa: temperature must be a finite value > 0, got " + format_number(options.temperature));
  if (!std::isfinite(options.scale))
    throw ValueError("sdpa: scale must be finite, got " + format_number(options.scale));

  const float base_scale =
      options.scale != 0.0f ? options.scale : (Dh > 0 ? 1.0f / std::sqrt(static_cast<float>(Dh)) : 1.0f);
  if (options.normalizer.kind != NormalizerKind::softmax || !(options.normalizer.alpha > 1.0f))
    return sdpa_normalized(q, k, v, options, base_scale / options.temperature, B, H, T, S, Dh, Dv);

  kernels::SdpaProblem p;
  p.B = B;
  p.H = H;
  p.T = T;
  p.S = S;
  p.Dh = Dh;
  p.Dv = Dv;
  p.scale = base_scale / options.temperature;
  p.causal = options.causal;
  p.causal_upper_left = options.causal_align == CausalAlign::upper_left;
  p.bias_head_stride = bias_head_stride;

  Tensor out = Tensor::empty({B, H, T, Dv});
  Tensor lse = Tensor::empty({B, H, T});
  Tensor weights = options.need_weights ? Tensor::empty({B, H, T, S}) : Tensor();
  Tensor bias = options.bias.defined() ? options.bias.detach() : Tensor();
  const Tensor learned_bias = options.bias.defined() && autodiff::needs_grad(options.bias) ? options.bias : Tensor();
  Tensor lengths = options.key_lengths;
  Tensor padding = options.key_padding_mask;
  {
    const int64_t workers = kernels::sdpa_forward_workers(p);
    Tensor scratch = Tensor::empty({workers * kernels::sdpa_forward_scratch_floats(p)});
    kernels::SdpaProblem fp = p;
    fp.bias = bias.defined() ? bias.f32() : nullptr;
    fp.key_lengths = lengths.defined() ? lengths.i32() : nullptr;
    fp.key_padding_mask = padding.defined() ? padding.i32() : nullptr;
    kernels::sdpa_forward(fp, q.f32(), k.f32(), v.f32(), out.f32(), lse.f32(),
                          weights.defined() ? weights.f32() : nullptr, scratch.f32(), workers);
  }

  if (autodiff::needs_grad(q, k, v) || learned_bias.defined()) {
    // One node for the whole attention. D = rowsum(dO ⊙ O) + rowsum(dW ⊙ W);
    // dS = P ⊙ (dO vᵀ + dW - D); dq += scale' dS k, dk += scale' dSᵀ q, dv += Pᵀ dO.
    auto backward_fn = [q, k, v, out, lse, weights, bias, learned_bias, lengths, padding, p]() mutable {
      const Tensor dout = out.has_grad() ? out.grad() : Tensor();
      const Tensor dweights = weights.defined() && weights.has_grad() ? weights.grad() : Tensor();
      if (!dout.defined() && !dweights.defined()) return;
      kernels::SdpaProblem bp = p;
      bp.bias = bias.defined() ? bias.f32() : nullptr;
      bp.key_lengths = lengths.defined() ? lengths.i32() : nullptr;
      bp.key_padding_mask = padding.defined() ? padding.i32() : nullptr;
      // dbias = dS: per (b, h) into a zeroed (B, H, T, S), then added (or summed over b, h
      // in a fixed order for a shared (T, S) bias) into the bias's gradient.
      Tensor dscores = learned_bias.defined() ? Tensor::zeros({bp.B, bp.H, bp.T, bp.S}) : Tensor();
      bp.dscores = dscores.defined() ? dscores.f32() : nullptr;

      // When q, k or v are the same tensor their gradients share one buffer; accumulate
      // into separate zeroed buffers first so the sum does not depend on the schedule.
      const bool aliased = q.same(k) || q.same(v) || k.same(v);
      Tensor dq, dk, dv;
      auto target = [aliased](const Tensor& x) {
        if (!x.requires_grad()) return Tensor();
        return aliased ? Tensor::zeros(x.shape()) : x.grad_accumulator();
      };
      dq = target(q);
      dk = target(k);
      dv = target(v);

      const int64_t workers = kernels::sdpa_backward_workers(bp);
      Tensor scratch = Tensor::empty({workers * kernels::sdpa_backward_scratch_floats(bp)});
      Tensor delta = Tensor::empty({bp.B, bp.H, bp.T});
      kernels::sdpa_backward(bp, q.f32(), k.f32(), v.f32(), out.f32(), lse.f32(), dout.defined() ? dout.f32() : nullptr,
                             dweights.defined() ? weights.f32() : nullptr,
                             dweights.defined() ? dweights.f32() : nullptr, dq.defined() ? dq.f32() : nullptr,
                             dk.defined() ? dk.f32() : nullptr, dv.defined() ? dv.f32() : nullptr, delta.f32(),
                             scratch.f32(), workers);
      if (dscores.defined()) {
        const int64_t plane = bp.T * bp.S, heads = bp.B * bp.H;
        float* db = learned_bias.grad_accumulator().f32();
        if (bp.bias_head_stride)
          kernels::add_into(db, dscores.f32(), heads * plane);
        else
          for (int64_t bh = 0; bh < heads; ++bh) kernels::add_into(db, dscores.f32() + bh * plane, plane);
      }
      if (aliased) {
        if (dq.defined()) kernels::add_into(q.grad_accumulator().f32(), dq.f32(), dq.numel());
        if (dk.defined()) kernels::add_into(k.grad_accumulator().f32(), dk.f32(), dk.numel());
        if (dv.defined()) kernels::add_into(v.grad_accumulator().f32(), dv.f32(), dv.numel());
      }
    };
    if (weights.defined())
      autodiff::record("sdpa", {out, weights}, std::move(backward_fn));
    else
      autodiff::record("sdpa", {out}, std::move(backward_fn));
  }
  return {out, weights};
}

}  // namespace attn
