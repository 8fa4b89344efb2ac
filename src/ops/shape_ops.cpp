#include "attn/ops/shape_ops.h"

#include <cstring>

#include "attn/autodiff/tape.h"
#include "kernels/elementwise.h"
#include "kernels/shape_ops.h"
#include "leading_rows.h"

namespace attn {
namespace {

using detail::leading_rows;

// "(2, 3, N)": the leading dimensions of `shape` with the last one named `last`.
std::string leading_pattern(const Shape& shape, const char* last) {
  std::string s = "(";
  for (int i = 0; i + 1 < shape.rank(); ++i) s += std::to_string(shape[i]) + ", ";
  return s + last + ")";
}

std::string part_name(size_t i) { return "'parts[" + std::to_string(i) + "]'"; }

void check_float(const char* op, const std::string& arg, const Tensor& t, const char* pattern) {
  if (!t.defined())
    throw ShapeError(std::string(op) + ": " + arg + " expected " + pattern + ", got an undefined tensor");
  if (t.dtype() != DType::f32)
    throw ShapeError(std::string(op) + ": " + arg + " expected dtype float32, got " + dtype_name(t.dtype()));
}

bool any_needs_grad(const std::vector<Tensor>& parts) {
  if (!autodiff::grad_enabled()) return false;
  for (const Tensor& p : parts)
    if (p.requires_grad()) return true;
  return false;
}

}  // namespace

Tensor concat(const std::vector<Tensor>& parts) {
  if (parts.empty()) throw ValueError("concat: expected at least one part, got none");
  check_float("concat", part_name(0), parts[0], "(..., N)");
  const Shape& first = parts[0].shape();
  if (first.rank() < 1) throw ShapeError("concat: " + part_name(0) + " expected (..., N), got " + first.str());
  int64_t total = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    check_float("concat", part_name(i), parts[i], "(..., N)");
    const Shape& s = parts[i].shape();
    bool ok = s.rank() == first.rank();
    for (int j = 0; ok && j + 1 < s.rank(); ++j) ok = s[j] == first[j];
    if (!ok)
      throw ShapeError("concat: " + part_name(i) + " expected " + leading_pattern(first, "N") +
                       " (the leading dimensions of 'parts[0]'), got " + s.str());
    total += s[-1];
  }
  const int64_t rows = leading_rows(first);
  std::vector<int64_t> dims = first.dims();
  dims.back() = total;
  Tensor y = Tensor::empty(Shape(dims));  // (..., Σ N_i)
  int64_t offset = 0;
  for (const Tensor& p : parts) {
    const int64_t w = p.shape()[-1];
    kernels::copy_2d(p.f32(), w, y.f32() + offset, total, rows, w);
    offset += w;
  }
  if (any_needs_grad(parts)) {
    autodiff::record("concat", {y}, [parts, y, rows, total]() mutable {
      // d parts[i] += dy[..., band i]
      const float* dy = y.grad().f32();
      int64_t offset = 0;
      for (const Tensor& p : parts) {
        const int64_t w = p.shape()[-1];
        if (p.requires_grad()) kernels::add_2d(dy + offset, total, p.grad_accumulator().f32(), w, rows, w);
        offset += w;
      }
    });
  }
  return y;
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes) {
  check_float("split", "'x'", x, "(..., N)");
  if (x.rank() < 1) throw ShapeError("split: 'x' expected (..., N), got " + x.shape().str());
  int64_t sum = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0)
      throw ValueError("split: sizes[" + std::to_string(i) + "] is " + std::to_string(sizes[i]) + ", must be >= 0");
    sum += sizes[i];
  }
  const int64_t n = x.shape()[-1];
  if (sum != n)
    throw ShapeError("split: 'x' expected " + leading_pattern(x.shape(), ("N=" + std::to_string(sum)).c_str()) +
                     " (the sum of sizes), got " + x.shape().str());
  const int64_t rows = leading_rows(x.shape());
  const bool grad = autodiff::needs_grad(x);
  std::vector<Tensor> outputs;
  outputs.reserve(sizes.size());
  int64_t offset = 0;
  for (int64_t w : sizes) {
    std::vector<int64_t> dims = x.shape().dims();
    dims.back() = w;
    Tensor out = Tensor::empty(Shape(dims));  // (..., sizes[i])
    kernels::copy_2d(x.f32() + offset, n, out.f32(), w, rows, w);
    // One node per output (the tape takes a fixed list of outputs): each runs only when
    // its output received a gradient, so any subset of the outputs may have one.
    if (grad) {
      autodiff::record("split", {out}, [x, out, offset, w, rows, n]() mutable {
        // dx[..., band] += d out
        kernels::add_2d(out.grad().f32(), w, x.grad_accumulator().f32() + offset, n, rows, w);
      });
    }
    outputs.push_back(out);
    offset += w;
  }
  return outputs;
}

Tensor stack_rows(const std::vector<Tensor>& parts) {
  if (parts.empty()) throw ValueError("stack_rows: expected at least one part, got none");
  check_float("stack_rows", part_name(0), parts[0], "(...)");
  const Shape& first = parts[0].shape();
  for (size_t i = 1; i < parts.size(); ++i) {
    check_float("stack_rows", part_name(i), parts[i], first.str().c_str());
    if (parts[i].shape() != first)
      throw ShapeError("stack_rows: " + part_name(i) + " expected " + first.str() + " (the shape of 'parts[0]'), got " +
                       parts[i].shape().str());
  }
  const int64_t t = static_cast<int64_t>(parts.size());
  const int64_t n = first.numel();
  std::vector<int64_t> dims = first.dims();
  dims.insert(dims.begin(), t);
  Tensor y = Tensor::empty(Shape(dims));  // (T, ...)
  // Each part as (rows, last) so the copy is split over rows.
  const int64_t last = first.rank() == 0 ? 1 : first[-1];
  const int64_t rows = last == 0 ? 0 : n / last;
  for (int64_t i = 0; i < t; ++i)
    kernels::copy_2d(parts[static_cast<size_t>(i)].f32(), last, y.f32() + i * n, last, rows, last);
  if (any_needs_grad(parts)) {
    autodiff::record("stack_rows", {y}, [parts, y, n]() mutable {
      // d parts[t] += dy[t]
      const float* dy = y.grad().f32();
      for (size_t i = 0; i < parts.size(); ++i)
        if (parts[i].requires_grad())
          kernels::add_into(parts[i].grad_accumulator().f32(), dy + static_cast<int64_t>(i) * n, n);
    });
  }
  return y;
}

Tensor reshape(const Tensor& x, const Shape& shape) {
  check_float("reshape", "'x'", x, "(...)");
  if (shape.numel() != x.numel())
    throw ShapeError("reshape: 'shape' " + shape.str() + " holds " + std::to_string(shape.numel()) + " elements, 'x' " +
                     x.shape().str() + " holds " + std::to_string(x.numel()));
  Tensor y = Tensor::empty(shape);
  if (x.numel() > 0) std::memcpy(y.f32(), x.f32(), static_cast<size_t>(x.numel()) * sizeof(float));
  if (autodiff::needs_grad(x)) {
    autodiff::record("reshape", {y}, [x, y]() mutable {
      // dx += dy (the same elements in the same order)
      kernels::add_into(x.grad_accumulator().f32(), y.grad().f32(), x.numel());
    });
  }
  return y;
}

Tensor transpose_last2(const Tensor& x) {
  check_float("transpose_last2", "'x'", x, "(..., M, N)");
  if (x.rank() < 2) throw ShapeError("transpose_last2: 'x' expected (..., M, N), got " + x.shape().str());
  std::vector<int64_t> dims = x.shape().dims();
  const int64_t m = dims[dims.size() - 2], n = dims.back();
  const int64_t batch = m * n == 0 ? 0 : x.numel() / (m * n);
  std::swap(dims[dims.size() - 2], dims.back());
  Tensor y = Tensor::empty(Shape(dims));  // (..., N, M)
  kernels::transpose_last2_forward(x.f32(), y.f32(), batch, m, n);
  if (autodiff::needs_grad(x)) {
    autodiff::record("transpose_last2", {y}, [x, y, batch, m, n]() mutable {
      // dx += dyᵀ
      kernels::transpose_last2_backward(y.grad().f32(), x.grad_accumulator().f32(), batch, m, n);
    });
  }
  return y;
}

Tensor pair_frames(const Tensor& x) {
  check_float("pair_frames", "'x'", x, "(S, B, E)");
  if (x.rank() != 3) throw ShapeError("pair_frames: 'x' expected (S, B, E), got " + x.shape().str());
  const int64_t S = x.dim(0), B = x.dim(1), E = x.dim(2), half = (S + 1) / 2;
  Tensor y = Tensor::zeros({half, B, 2 * E});  // (⌈S/2⌉, B, 2E); an odd S leaves the last pair's second half 0
  // Time step t (B, E) goes to the band t % 2 of pair t / 2.
  for (int64_t t = 0; t < S; ++t)
    kernels::copy_2d(x.f32() + t * B * E, E, y.f32() + (t / 2) * B * 2 * E + (t % 2) * E, 2 * E, B, E);
  if (autodiff::needs_grad(x)) {
    autodiff::record("pair_frames", {y}, [x, y, S, B, E]() mutable {
      // dx[t] += dy[t / 2][:, band t % 2]
      const float* dy = y.grad().f32();
      float* dx = x.grad_accumulator().f32();
      for (int64_t t = 0; t < S; ++t)
        kernels::add_2d(dy + (t / 2) * B * 2 * E + (t % 2) * E, 2 * E, dx + t * B * E, E, B, E);
    });
  }
  return y;
}

}  // namespace attn
