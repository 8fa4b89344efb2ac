#include "attn/ops/softmax.h"

#include <fmt/format.h>

#include <cmath>

#include "attn/autodiff/tape.h"
#include "attn/enum_names.h"
#include "kernel_normalizer.h"
#include "kernels/normalizer.h"
#include "kernels/softmax.h"

namespace attn {
namespace {

// x: float32 of rank >= 1; mask: undefined or int32 of exactly x's shape.
void check_softmax_args(const char* op, const Tensor& x, const Tensor& mask) {
  const std::string name(op);
  if (!x.defined()) throw ShapeError(name + ": 'x' expected (..., N), got an undefined tensor");
  if (x.dtype() != DType::f32) throw ShapeError(name + ": 'x' expected dtype float32, got " + dtype_name(x.dtype()));
  if (x.rank() == 0) throw ShapeError(name + ": 'x' expected (..., N) with rank >= 1, got a scalar ()");
  if (!mask.defined()) return;
  if (mask.dtype() != DType::i32)
    throw ShapeError(name + ": 'mask' expected dtype int32, got " + dtype_name(mask.dtype()));
  if (mask.shape() != x.shape())
    throw ShapeError(name + ": 'mask' expected " + x.shape().str() +
                     " (exactly the shape of 'x', no broadcasting), got " + mask.shape().str());
}

using RowsForward = void (*)(const float* x, const int32_t* mask, float* y, int64_t rows, int64_t n);
using RowsBackward = void (*)(const float* y, const int32_t* mask, const float* dy, float* dx, int64_t rows, int64_t n);

// x (..., N) normalised along its last dimension: forward(x, mask, y) over its rows, one tape
// node calling backward(y, mask, dy, dx) (mask: nullptr when undefined).
Tensor softmax_rows(const char* op, const Tensor& x, const Tensor& mask, RowsForward forward, RowsBackward backward) {
  check_softmax_args(op, x, mask);
  const int64_t n = x.shape().last();
  const int64_t rows = x.numel() == 0 ? 0 : x.numel() / n;
  Tensor y = Tensor::empty(x.shape());
  forward(x.f32(), mask.defined() ? mask.i32() : nullptr, y.f32(), rows, n);
  if (autodiff::needs_grad(x)) {
    autodiff::record(op, {y}, [x, y, mask, rows, n, backward]() mutable {
      backward(y.f32(), mask.defined() ? mask.i32() : nullptr, y.grad().f32(), x.grad_accumulator().f32(), rows, n);
    });
  }
  return y;
}

}  // namespace

Tensor softmax(const Tensor& x, const Tensor& mask) {
  // dx += y ⊙ (dy − Σ dy⊙y); masked positions have y = 0 and so get nothing.
  return softmax_rows("softmax", x, mask, kernels::softmax_forward,
                      [](const float* y, const int32_t*, const float* dy, float* dx, int64_t rows, int64_t n) {
                        kernels::softmax_backward(y, dy, dx, rows, n);
                      });
}

Tensor log_softmax(const Tensor& x, const Tensor& mask) {
  // dx += dy − exp(y) Σ_kept dy on kept positions
  return softmax_rows("log_softmax", x, mask, kernels::log_softmax_forward, kernels::log_softmax_backward);
}

// ---- the sparse normalisers --------------------------------------------------------------------

namespace {

constexpr EnumName<NormalizerKind> kNormalizerNames[] = {{NormalizerKind::softmax, "softmax"},
                                                         {NormalizerKind::sparsemax, "sparsemax"},
                                                         {NormalizerKind::entmax15, "entmax15"},
                                                         {NormalizerKind::entmax, "entmax"}};

// A sparse normaliser over the rows of x: one tape node, dx += g ⊙ (dy − Σ g dy / Σ g).
Tensor sparse_normalizer(const char* op, const Tensor& x, const Normalizer& normalizer, const Tensor& mask) {
  check_softmax_args(op, x, mask);
  check_normalizer(op, normalizer);
  const kernels::Normalizer norm = kernel_normalizer(normalizer);
  const int64_t n = x.shape().last();
  const kernels::NormalizerRows rows{
      .rows = x.numel() == 0 ? 0 : x.numel() / n, .n = n, .mask = mask.defined() ? mask.i32() : nullptr};
  Tensor y = Tensor::empty(x.shape());  // never x: the sort-based kinds sort in y
  kernels::normalizer_forward(norm, rows, x.f32(), y.f32());
  if (autodiff::needs_grad(x)) {
    autodiff::record(op, {y}, [x, y, norm, rows]() mutable {
      kernels::normalizer_backward(norm, rows, nullptr, y.f32(), y.grad().f32(), x.grad_accumulator().f32());
    });
  }
  return y;
}

}  // namespace

kernels::Normalizer kernel_normalizer(const Normalizer& normalizer) {
  switch (normalizer.kind) {
    case NormalizerKind::softmax:
      return {kernels::NormalizerKind::softmax};
    case NormalizerKind::sparsemax:
      return {kernels::NormalizerKind::sparsemax};
    case NormalizerKind::entmax15:
      return {kernels::NormalizerKind::entmax15};
    case NormalizerKind::entmax:
      return {kernels::NormalizerKind::entmax_bisect, 1.0f, normalizer.alpha};
  }
  throw ValueError("normalize: unknown normaliser " + std::to_string(static_cast<int>(normalizer.kind)));
}

const char* normalizer_name(NormalizerKind kind) { return enum_name(kNormalizerNames, kind, "unknown"); }

NormalizerKind parse_normalizer(const std::string& name) {
  if (const std::optional<NormalizerKind> kind = enum_from_name(kNormalizerNames, name)) return *kind;
  throw ValueError("unknown normaliser '" + name + "': expected softmax, sparsemax, entmax15 or entmax");
}

void check_normalizer(const std::string& op, const Normalizer& normalizer) {
  if (!(normalizer.alpha > 1.0f) || !std::isfinite(normalizer.alpha))
    throw ValueError(op + ": entmax's alpha must be finite and > 1, got " + fmt::format("{}", normalizer.alpha) +
                     " (alpha -> 1 is softmax, 1.5 entmax15, 2 sparsemax)");
}

Tensor sparsemax(const Tensor& x, const Tensor& mask) {
  return sparse_normalizer("sparsemax", x, {NormalizerKind::sparsemax}, mask);
}

Tensor entmax15(const Tensor& x, const Tensor& mask) {
  return sparse_normalizer("entmax15", x, {NormalizerKind::entmax15}, mask);
}

Tensor entmax_bisect(const Tensor& x, float alpha, const Tensor& mask) {
  return sparse_normalizer("entmax_bisect", x, {NormalizerKind::entmax, alpha}, mask);
}

Tensor normalize(const Tensor& x, const Normalizer& normalizer, const Tensor& mask) {
  switch (normalizer.kind) {
    case NormalizerKind::softmax:
      check_normalizer("softmax", normalizer);
      return softmax(x, mask);
    case NormalizerKind::sparsemax:
      return sparsemax(x, mask);
    case NormalizerKind::entmax15:
      return entmax15(x, mask);
    case NormalizerKind::entmax:
      return entmax_bisect(x, normalizer.alpha, mask);
  }
  throw ValueError("normalize: unknown normaliser " + std::to_string(static_cast<int>(normalizer.kind)));
}

}  // namespace attn
