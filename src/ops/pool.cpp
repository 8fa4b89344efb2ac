#include "attn/ops/pool.h"

#include <string>

#include "attn/autodiff/tape.h"
#include "kernels/pool.h"

namespace attn {
namespace {

// Checks x (B, S, E) and lengths (B) in [0, S].
void check_pool_args(const char* op, const Tensor& x, const Tensor& lengths) {
  ShapeContract c(op);
  c.check("x", x, {"B", "S", "E"}).check("lengths", lengths, {"B"}, DType::i32);
  check_length_values(op, "lengths", lengths, 0, "S", x.dim(1));
}

}  // namespace

MaxTimeResult masked_max_time_with_indices(const Tensor& x, const Tensor& lengths) {
  check_pool_args("masked_max_time", x, lengths);
  const int64_t B = x.dim(0), S = x.dim(1), E = x.dim(2);
  Tensor y = Tensor::empty({B, E});                   // (B, E)
  Tensor argmax = Tensor::empty({B, E}, DType::i32);  // (B, E)
  kernels::masked_max_time_forward(x.f32(), lengths.i32(), y.f32(), argmax.i32(), B, S, E);
  if (autodiff::needs_grad(x)) {
    // dx[b, argmax[b, e], e] += dy[b, e]
    autodiff::record("masked_max_time", {y}, [x, y, argmax, B, S, E]() mutable {
      kernels::masked_max_time_backward(y.grad().f32(), argmax.i32(), x.grad_accumulator().f32(), B, S, E);
    });
  }
  return {y, argmax};
}

Tensor masked_max_time(const Tensor& x, const Tensor& lengths) {
  return masked_max_time_with_indices(x, lengths).values;
}

Tensor masked_mean_time(const Tensor& x, const Tensor& lengths) {
  check_pool_args("masked_mean_time", x, lengths);
  const int64_t B = x.dim(0), S = x.dim(1), E = x.dim(2);
  Tensor y = Tensor::empty({B, E});  // (B, E)
  kernels::masked_mean_time_forward(x.f32(), lengths.i32(), y.f32(), B, S, E);
  if (autodiff::needs_grad(x)) {
    // Lengths are copied: the caller may reuse its buffer before backward runs.
    Tensor saved_lengths = lengths.clone();
    // dx[b, s, e] += dy[b, e] / L_b for s < L_b
    autodiff::record("masked_mean_time", {y}, [x, y, saved_lengths, B, S, E]() mutable {
      kernels::masked_mean_time_backward(y.grad().f32(), saved_lengths.i32(), x.grad_accumulator().f32(), B, S, E);
    });
  }
  return y;
}

}  // namespace attn
