#include "attn/ops/select.h"

#include <cstring>
#include <string>

#include "attn/autodiff/tape.h"
#include "kernels/elementwise.h"

namespace attn {
namespace {

void check_defined_f32(const char* op, const char* arg, const Tensor& t, const std::string& expected) {
  if (!t.defined())
    throw ShapeError(std::string(op) + ": '" + arg + "' expected " + expected + ", got an undefined tensor");
  if (t.dtype() != DType::f32)
    throw ShapeError(std::string(op) + ": '" + arg + "' expected dtype float32, got " + dtype_name(t.dtype()));
  if (t.rank() < 1)
    throw ShapeError(std::string(op) + ": '" + arg + "' expected " + expected + ", got " + t.shape().str());
}

}  // namespace

Tensor where_rows(const Tensor& keep, const Tensor& a, const Tensor& b) {
  check_defined_f32("where_rows", "a", a, "(B, ...)");
  ShapeContract c("where_rows");
  c.bind("B", a.dim(0));
  c.check("keep", keep, {"B"}, DType::i32);
  if (b.defined()) {
    check_defined_f32("where_rows", "b", b, a.shape().str());
    if (b.shape() != a.shape())
      throw ShapeError("where_rows: 'b' expected " + a.shape().str() + " (the shape of 'a'), got " + b.shape().str());
  }
  const int64_t rows = a.dim(0);
  const int64_t width = rows == 0 ? 0 : a.numel() / rows;
  const int32_t* k = keep.i32();
  bool all = true;
  for (int64_t i = 0; i < rows; ++i) all = all && k[i] != 0;
  if (all) return a;

  Tensor y = Tensor::empty(a.shape());  // (B, ...)
  for (int64_t i = 0; i < rows; ++i) {
    float* dst = y.f32() + i * width;
    if (k[i] != 0)
      std::memcpy(dst, a.f32() + i * width, sizeof(float) * width);
    else if (b.defined())
      std::memcpy(dst, b.f32() + i * width, sizeof(float) * width);
    else
      std::memset(dst, 0, sizeof(float) * width);
  }
  if (autodiff::needs_grad(a, b)) {
    autodiff::record("where_rows", {y}, [keep, a, b, y, rows, width]() mutable {
      // da[i] += dy[i] if keep[i]; db[i] += dy[i] otherwise
      const int32_t* k = keep.i32();
      const float* dy = y.grad().f32();
      float* da = a.requires_grad() ? a.grad_accumulator().f32() : nullptr;
      float* db = b.defined() && b.requires_grad() ? b.grad_accumulator().f32() : nullptr;
      for (int64_t i = 0; i < rows; ++i) {
        float* dst = k[i] != 0 ? da : db;
        if (dst) kernels::add_into(dst + i * width, dy + i * width, width);
      }
    });
  }
  return y;
}

Tensor transpose_01(const Tensor& x) {
  check_defined_f32("transpose_01", "x", x, "(N0, N1, ...)");
  if (x.rank() < 2) throw ShapeError("transpose_01: 'x' expected (N0, N1, ...), got " + x.shape().str());
  std::vector<int64_t> dims = x.shape().dims();
  const int64_t n0 = dims[0], n1 = dims[1];
  const int64_t inner = n0 * n1 == 0 ? 0 : x.numel() / (n0 * n1);
  std::swap(dims[0], dims[1]);
  Tensor y = Tensor::empty(Shape(dims));  // (N1, N0, ...)
  const float* src = x.f32();
  float* dst = y.f32();
  for (int64_t i = 0; i < n0; ++i)
    for (int64_t j = 0; j < n1; ++j)
      std::memcpy(dst + (j * n0 + i) * inner, src + (i * n1 + j) * inner, sizeof(float) * inner);
  if (autodiff::needs_grad(x)) {
    autodiff::record("transpose_01", {y}, [x, y, n0, n1, inner]() mutable {
      // dx[i, j] += dy[j, i]
      const float* dy = y.grad().f32();
      float* dx = x.grad_accumulator().f32();
      for (int64_t i = 0; i < n0; ++i)
        for (int64_t j = 0; j < n1; ++j) kernels::add_into(dx + (i * n1 + j) * inner, dy + (j * n0 + i) * inner, inner);
    });
  }
  return y;
}

Tensor gather_rows(const Tensor& x, const Tensor& index) {
  check_defined_f32("gather_rows", "x", x, "(N, ...)");
  ShapeContract c("gather_rows");
  c.check("index", index, {"M"}, DType::i32);
  const int64_t n = x.dim(0), m = index.numel();
  const int64_t width = n == 0 ? 0 : x.numel() / n;
  const int32_t* idx = index.i32();
  for (int64_t i = 0; i < m; ++i)
    if (idx[i] < 0 || idx[i] >= n)
      throw ValueError("gather_rows: index " + std::to_string(idx[i]) + " at position " + std::to_string(i) +
                       " is out of range [0, N=" + std::to_string(n) + ")");
  std::vector<int64_t> dims = x.shape().dims();
  dims[0] = m;
  Tensor y = Tensor::empty(Shape(dims));  // (M, ...)
  for (int64_t i = 0; i < m; ++i) std::memcpy(y.f32() + i * width, x.f32() + idx[i] * width, sizeof(float) * width);
  if (autodiff::needs_grad(x)) {
    autodiff::record("gather_rows", {y}, [x, index, y, m, width]() mutable {
      // dx[index[i]] += dy[i]
      const int32_t* idx = index.i32();
      const float* dy = y.grad().f32();
      float* dx = x.grad_accumulator().f32();
      for (int64_t i = 0; i < m; ++i) kernels::add_into(dx + idx[i] * width, dy + i * width, width);
    });
  }
  return y;
}

}  // namespace attn
