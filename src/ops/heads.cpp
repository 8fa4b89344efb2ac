#include "attn/ops/heads.h"

#include <string>

#include "attn/autodiff/tape.h"
#include "kernels/heads.h"

namespace attn {
namespace {

// Checks x (B, T, N) against `heads` and `parts`; returns Dh = N / (parts · heads).
int64_t check_split(const char* op, ShapeContract& c, const Tensor& x, int64_t heads, int64_t parts) {
  c.check("x", x, {"B", "T", "N"});
  if (heads <= 0) throw ValueError(std::string(op) + ": heads must be positive, got " + std::to_string(heads));
  if (parts <= 0) throw ValueError(std::string(op) + ": parts must be positive, got " + std::to_string(parts));
  const int64_t N = c["N"];
  if (N % (parts * heads) != 0) {
    if (parts == 1)
      throw ValueError(std::string(op) + ": last dimension " + std::to_string(N) +
                       " is not divisible by heads=" + std::to_string(heads));
    throw ValueError(std::string(op) + ": last dimension " + std::to_string(N) +
                     " is not divisible by parts=" + std::to_string(parts) + " x heads=" + std::to_string(heads));
  }
  return N / (parts * heads);
}

}  // namespace

std::vector<Tensor> split_heads_packed(const Tensor& x, int64_t heads, int64_t parts) {
  ShapeContract c("split_heads");
  const int64_t Dh = check_split("split_heads", c, x, heads, parts);
  const int64_t B = c["B"], T = c["T"], W = c["N"], H = heads;
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(parts));
  for (int64_t p = 0; p < parts; ++p) {
    Tensor y = Tensor::empty({B, H, T, Dh});
    kernels::split_heads_forward(x.f32(), y.f32(), B, T, H, Dh, W, p * H * Dh);
    out.push_back(y);
  }
  if (autodiff::needs_grad(x)) {
    // dx[b, t, p·H·Dh + h·Dh + d] += dy_p[b, h, t, d]; the parts own disjoint column bands.
    autodiff::record("split_heads", out, [x, out, B, T, H, Dh, W]() mutable {
      Tensor dx = x.grad_accumulator();
      for (size_t p = 0; p < out.size(); ++p)
        if (out[p].has_grad())
          kernels::split_heads_backward(out[p].grad().f32(), dx.f32(), B, T, H, Dh, W,
                                        static_cast<int64_t>(p) * H * Dh);
    });
  }
  return out;
}

Tensor split_heads(const Tensor& x, int64_t heads) { return split_heads_packed(x, heads, 1)[0]; }

Tensor merge_heads(const Tensor& x) {
  ShapeContract c("merge_heads");
  c.check("x", x, {"B", "H", "T", "Dh"});
  const int64_t B = c["B"], H = c["H"], T = c["T"], Dh = c["Dh"];
  Tensor y = Tensor::empty({B, T, H * Dh});
  kernels::merge_heads_forward(x.f32(), y.f32(), B, H, T, Dh);
  if (autodiff::needs_grad(x)) {
    // dx[b, h, t, d] += dy[b, t, h·Dh + d]
    autodiff::record("merge_heads", {y}, [x, y, B, H, T, Dh]() mutable {
      kernels::merge_heads_backward(y.grad().f32(), x.grad_accumulator().f32(), B, H, T, Dh);
    });
  }
  return y;
}

Tensor select_heads(const Tensor& x, const std::vector<int>& heads) {
  ShapeContract c("select_heads");
  c.check("x", x, {"B", "H", "T", "S"});
  const int64_t B = c["B"], H = c["H"], T = c["T"], S = c["S"];
  if (heads.empty()) throw ValueError("select_heads: no heads selected (give at least one head index)");
  std::vector<int32_t> index(heads.size());
  for (size_t i = 0; i < heads.size(); ++i) {
    if (heads[i] < 0 || heads[i] >= H)
      throw ValueError("select_heads: head " + std::to_string(heads[i]) +
                       " is out of range [0, H=" + std::to_string(H) + ")");
    index[i] = heads[i];
  }
  const int64_t K = static_cast<int64_t>(heads.size());
  Tensor idx = Tensor::from_vector(index, {K});
  Tensor y = Tensor::empty({B, K, T, S});
  kernels::select_heads_forward(x.f32(), idx.i32(), y.f32(), B, H, K, T * S);
  if (autodiff::needs_grad(x)) {
    // dx[:, heads[i]] += dy[:, i]
    autodiff::record("select_heads", {y}, [x, y, idx, B, H, K, T, S]() mutable {
      kernels::select_heads_backward(y.grad().f32(), idx.i32(), x.grad_accumulator().f32(), B, H, K, T * S);
    });
  }
  return y;
}

Tensor mean_heads(const Tensor& x) {
  ShapeContract c("mean_heads");
  c.check("x", x, {"B", "H", "T", "S"});
  const int64_t B = c["B"], H = c["H"], T = c["T"], S = c["S"];
  if (H == 0) throw ValueError("mean_heads: the mean over H=0 heads is undefined");
  Tensor y = Tensor::empty({B, T, S});
  kernels::mean_heads_forward(x.f32(), y.f32(), B, H, T * S);
  if (autodiff::needs_grad(x)) {
    // dx[:, h] += dy / H
    autodiff::record("mean_heads", {y}, [x, y, B, H, T, S]() mutable {
      kernels::mean_heads_backward(y.grad().f32(), x.grad_accumulator().f32(), B, H, T * S);
    });
  }
  return y;
}

Tensor head_matmul(const Tensor& x, const Tensor& w) {
  ShapeContract c("head_matmul");
  c.check("x", x, {"B", "H", "T", "M"});
  c.check("w", w, {"H", "M", "K"});
  const int64_t B = c["B"], H = c["H"], T = c["T"], M = c["M"], K = c["K"];
  Tensor y = Tensor::empty({B, H, T, K});
  kernels::head_matmul_forward(x.f32(), w.f32(), y.f32(), B, H, T, M, K);
  if (autodiff::needs_grad(x, w)) {
    // dx[b, h] += dy[b, h] w[h]ᵀ, dw[h] += Σ_b x[b, h]ᵀ dy[b, h]
    autodiff::record("head_matmul", {y}, [x, w, y, B, H, T, M, K]() mutable {
      const float* dy = y.grad().f32();
      if (x.requires_grad()) kernels::head_matmul_backward_x(dy, w.f32(), x.grad_accumulator().f32(), B, H, T, M, K);
      if (w.requires_grad()) kernels::head_matmul_backward_w(dy, x.f32(), w.grad_accumulator().f32(), B, H, T, M, K);
    });
  }
  return y;
}

}  // namespace attn
