#include "attn/ops/reduce.h"

#include "attn/autodiff/tape.h"
#include "kernels/reduce.h"

namespace attn {
namespace {

void check_float(const char* op, const Tensor& x, const char* pattern) {
  if (!x.defined()) throw ShapeError(std::string(op) + ": 'x' expected " + pattern + ", got an undefined tensor");
  if (x.dtype() != DType::f32)
    throw ShapeError(std::string(op) + ": 'x' expected dtype float32, got " + dtype_name(x.dtype()));
}

// Σ x in double, in the fixed order of kernels::sum_all.
double total_of(const Tensor& x) {
  // Scratch for one double per chunk, from the pool (buffers are 64-byte aligned).
  Tensor scratch = Tensor::empty({2 * kernels::sum_all_partials(x.numel())});
  return kernels::sum_all(x.f32(), x.numel(), reinterpret_cast<double*>(scratch.f32()));
}

// sum (scale 1) or mean (scale 1/n) of everything.
Tensor reduce_all(const char* op, const Tensor& x, bool mean) {
  check_float(op, x, "(...)");
  const int64_t n = x.numel();
  if (mean && n == 0)
    throw ValueError(std::string(op) + ": 'x' " + x.shape().str() + " has no elements; the mean of none is undefined");
  const double total = total_of(x);
  Tensor y = Tensor::scalar(static_cast<float>(mean ? total / static_cast<double>(n) : total));  // ()
  if (autodiff::needs_grad(x)) {
    autodiff::record(op, {y}, [x, y, n, mean]() mutable {
      // sum: dx += dy;  mean: dx += dy / n
      const float dy = y.grad().f32()[0];
      const float g = mean ? static_cast<float>(static_cast<double>(dy) / static_cast<double>(n)) : dy;
      kernels::add_scalar_into(x.grad_accumulator().f32(), g, n);
    });
  }
  return y;
}

// sum or mean over the last dimension.
Tensor reduce_last(const char* op, const Tensor& x, bool mean) {
  check_float(op, x, "(..., N)");
  if (x.rank() < 1) throw ShapeError(std::string(op) + ": 'x' expected (..., N), got " + x.shape().str());
  const int64_t n = x.shape()[-1];
  if (mean && n == 0)
    throw ValueError(std::string(op) + ": the last dimension of 'x' " + x.shape().str() +
                     " is 0; the mean of no elements is undefined");
  std::vector<int64_t> dims = x.shape().dims();
  dims.pop_back();
  Tensor y = Tensor::empty(Shape(dims));  // (...)
  const int64_t rows = y.numel();
  kernels::sum_rows_forward(x.f32(), y.f32(), rows, n, mean ? 1.0 / static_cast<double>(n) : 1.0);
  if (autodiff::needs_grad(x)) {
    autodiff::record(op, {y}, [x, y, rows, n, mean]() mutable {
      // sum: dx[r, j] += dy[r];  mean: dx[r, j] += dy[r] / n
      const float scale = mean ? static_cast<float>(1.0 / static_cast<double>(n)) : 1.0f;
      kernels::sum_rows_backward(y.grad().f32(), x.grad_accumulator().f32(), rows, n, scale);
    });
  }
  return y;
}

}  // namespace

Tensor sum(const Tensor& x) { return reduce_all("sum", x, false); }
Tensor mean(const Tensor& x) { return reduce_all("mean", x, true); }
Tensor sum_last(const Tensor& x) { return reduce_last("sum_last", x, false); }
Tensor mean_last(const Tensor& x) { return reduce_last("mean_last", x, true); }

int32_t argmax(const float* row, int64_t n) {
  int32_t best = 0;
  for (int32_t v = 1; v < n; ++v)
    if (row[v] > row[best]) best = v;
  return best;
}

std::vector<int32_t> argmax_last(const Tensor& x) {
  check_float("argmax_last", x, "(..., N)");
  if (x.rank() < 1) throw ShapeError("argmax_last: 'x' expected (..., N), got a scalar");
  const int64_t n = x.dim(-1);
  if (n == 0) throw ValueError("argmax_last: 'x' has N = 0: no largest value");
  const int64_t rows = x.numel() / n;
  std::vector<int32_t> out(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) out[static_cast<size_t>(r)] = argmax(x.f32() + r * n, n);
  return out;
}

}  // namespace attn
