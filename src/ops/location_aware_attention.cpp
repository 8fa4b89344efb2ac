// Chorowski et al.'s location-aware attention, composed of ops that each record their own
// tape node (attn/ops/attention.h):
//   cols = im2col(a_{t−1})                  (B, S, r)   this file's node (kernels/location_aware.h)
//   f    = cols Fᵀ                          (B, S, K)   linear: the convolution as one GEMM
//   k̃_t  = k̃ + f Uᵀ                         (B, S, A)   linear, add
//   a, c = additive_attention(q, k̃_t, ...)              with τ = 1/β, optional smoothing
// The score's tanh, softmax and context are the Bahdanau op's fused kernels; only the
// location term is new. Per step it costs B·S·r·K + B·S·K·A multiply-adds on top of Bahdanau.
#include <fmt/format.h>

#include <cmath>

#include "attn/autodiff/tape.h"
#include "attn/error.h"
#include "attn/ops/attention.h"
#include "attn/ops/elementwise.h"
#include "attn/ops/linear.h"
#include "attn/shape.h"
#include "kernels/location_aware.h"

namespace attn {
namespace {

// cols[b, s, j] = prev[b, s + j − r/2] (zero padded): prev (B, S) -> (B, S, r).
Tensor location_windows(const Tensor& prev, int64_t r) {
  const int64_t B = prev.dim(0), S = prev.dim(1);
  Tensor cols = Tensor::empty({B, S, r});
  kernels::location_windows_forward(prev.f32(), B, S, r, cols.f32());
  if (autodiff::needs_grad(prev)) {
    // cols is a selection of prev's entries: dprev[i] += Σ of the dcols that read position i.
    autodiff::record("location_windows", {cols}, [prev, cols, B, S, r]() {
      kernels::location_windows_backward(cols.grad().f32(), B, S, r, prev.grad_accumulator().f32());
    });
  }
  return cols;
}

}  // namespace

Tensor location_aware_features(const Tensor& prev_weights, const Tensor& filters) {
  ShapeContract c("location_aware_features");
  c.check("prev_weights", prev_weights, {"B", "S"}).check("filters", filters, {"K", "r"});
  const int64_t r = c["r"];
  if (r % 2 == 0)
    throw ValueError(
        fmt::format("location_aware_features: the filter width r={} must be odd (centred on the position)", r));
  return linear(location_windows(prev_weights, r), filters);  // (B, S, r) · (K, r)ᵀ -> (B, S, K)
}

AttentionResult location_aware_attention(const Tensor& query, const Tensor& projected_keys, const Tensor& values,
                                         const Tensor& prev_weights, const Tensor& w_q, const Tensor& bias,
                                         const Tensor& v, const Tensor& filters, const Tensor& w_loc,
                                         const Tensor& lengths, const LocationAwareOptions& options) {
  const std::string op = "location_aware_attention";
  ShapeContract c(op);
  c.check("query", query, {"B", "D"});
  c.check("projected_keys", projected_keys, {"B", "S", "A"});
  c.check("prev_weights", prev_weights, {"B", "S"});
  c.check("filters", filters, {"K", "r"});
  c.check("w_loc", w_loc, {"A", "K"});
  if (!(options.sharpening > 0.0f) || !std::isfinite(options.sharpening))
    throw ValueError(fmt::format("{}: sharpening β must be finite and > 0, got {}", op, options.sharpening));
  // The rest (values, w_q, bias, v, lengths) is checked by additive_attention.
  const Tensor location = linear(location_aware_features(prev_weights, filters), w_loc);  // U f (B, S, A)
  AdditiveOptions o;
  o.temperature = 1.0f / options.sharpening;
  o.smoothing = options.smoothing;
  o.normalizer = options.normalizer;
  o.need_weights = options.need_weights;
  return additive_attention(query, add(projected_keys, location), values, w_q, bias, v, lengths, o);
}

}  // namespace attn
