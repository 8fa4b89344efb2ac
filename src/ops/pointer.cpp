#include "attn/ops/pointer.h"

#include <fmt/format.h>

#include <string>

#include "attn/autodiff/tape.h"
#include "kernels/pointer.h"

namespace attn {

Tensor pointer_log_probs(const Tensor& logits, const Tensor& p_gen, const Tensor& attention, const Tensor& src_ids,
                         int64_t extended_vocab) {
  constexpr const char* op = "pointer_log_probs";
  ShapeContract contract(op);
  contract.check("logits", logits, {"N", "V"}).check("p_gen", p_gen, {"N"});
  contract.check("attention", attention, {"N", "S"}).check("src_ids", src_ids, {"N", "S"}, DType::i32);
  const int64_t N = contract["N"], V = contract["V"], S = contract["S"], Vx = extended_vocab;
  if (Vx < V) throw ValueError(fmt::format("{}: extended_vocab must be >= V={}, got {}", op, V, Vx));
  const int32_t* ids = src_ids.i32();
  for (int64_t i = 0; i < N * S; ++i)
    if (ids[i] < 0 || ids[i] >= Vx)
      throw ValueError(fmt::format("{}: 'src_ids' value {} at index {} is outside the extended vocabulary [0, Vx={})",
                                   op, ids[i], i, Vx));
  for (int64_t r = 0; r < N; ++r)
    if (!(p_gen.f32()[r] >= 0.0f && p_gen.f32()[r] <= 1.0f))
      throw ValueError(fmt::format("{}: 'p_gen' value {} at index {} is outside [0, 1]", op, p_gen.f32()[r], r));
  Tensor pv = Tensor::empty({N, V});  // P_vocab, saved for backward
  Tensor P = Tensor::empty({N, Vx});  // the mixture, saved for backward
  Tensor y = Tensor::empty({N, Vx});  // (N, Vx)
  kernels::pointer_mixture_forward(logits.f32(), p_gen.f32(), attention.f32(), ids, pv.f32(), P.f32(), y.f32(), N, V,
                                   Vx, S, kPointerFloor);
  if (autodiff::needs_grad(logits, p_gen, attention)) {
    // g = dy / P above the floor; dlogits += p_gen pv ⊙ (g − Σ pv g); da_i += (1 − p_gen) g[src_i];
    // dp_gen += Σ pv g − Σ_i a_i g[src_i]
    autodiff::record(op, {y}, [logits, p_gen, attention, src_ids, pv, P, y, N, V, Vx, S]() mutable {
      float* dl = logits.requires_grad() ? logits.grad_accumulator().f32() : nullptr;
      float* dp = p_gen.requires_grad() ? p_gen.grad_accumulator().f32() : nullptr;
      float* da = attention.requires_grad() ? attention.grad_accumulator().f32() : nullptr;
      kernels::pointer_mixture_backward(y.grad().f32(), p_gen.f32(), attention.f32(), src_ids.i32(), pv.f32(), P.f32(),
                                        dl, dp, da, N, V, Vx, S, kPointerFloor);
    });
  }
  return y;
}

}  // namespace attn
