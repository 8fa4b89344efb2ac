#include "attn/ops/linear.h"

#include "attn/autodiff/tape.h"
#include "kernels/blas.h"
#include "kernels/reduce.h"
#include "leading_rows.h"
#include "weight_gemm.h"

namespace attn {
namespace {

using detail::leading_rows;

// The shared body of matmul (batch = 1, rank 2) and bmm (rank 3).
Tensor matmul_impl(const char* op, const Tensor& a, const Tensor& b, MatmulOptions options, bool batched) {
  const bool ta = options.transpose_a;
  const bool tb = options.transpose_b;
  ShapeContract c(op);
  if (batched) {
    if (ta)
      c.check("a", a, {"B", "K", "M"});
    else
      c.check("a", a, {"B", "M", "K"});
    if (tb)
      c.check("b", b, {"B", "N", "K"});
    else
      c.check("b", b, {"B", "K", "N"});
  } else {
    if (ta)
      c.check("a", a, {"K", "M"});
    else
      c.check("a", a, {"M", "K"});
    if (tb)
      c.check("b", b, {"N", "K"});
    else
      c.check("b", b, {"K", "N"});
  }
  const int64_t batch = batched ? c["B"] : 1;
  const int64_t m = c["M"], n = c["N"], k = c["K"];
  const int64_t lda = ta ? m : k;  // row strides of a and b as stored
  const int64_t ldb = tb ? k : n;
  const int64_t sa = m * k, sb = k * n, sc = m * n;  // per-item strides

  Tensor y = batched ? Tensor::empty({batch, m, n}) : Tensor::empty({m, n});  // (B, M, N) or (M, N)
  kernels::gemm_batched(ta, tb, batch, m, n, k, 1.0f, a.f32(), lda, sa, b.f32(), ldb, sb, 0.0f, y.f32(), n, sc);

  if (autodiff::needs_grad(a, b)) {
    autodiff::record(op, {y}, [a, b, y, ta, tb, batch, m, n, k, lda, ldb, sa, sb, sc]() mutable {
      // C = op(A) op(B):  d op(A) = dC op(B)ᵀ,  d op(B) = op(A)ᵀ dC; a transposed operand
      // takes the transpose of its gradient.
      const float* dc = y.grad().f32();
      if (a.requires_grad()) {
        float* da = a.grad_accumulator().f32();
        if (!ta)  // dA (M, K) += dC (M, N) op(B)ᵀ (N, K)
          kernels::gemm_batched(false, !tb, batch, m, k, n, 1.0f, dc, n, sc, b.f32(), ldb, sb, 1.0f, da, k, sa);
        else  // dA (K, M) += op(B) (K, N) dCᵀ (N, M)
          kernels::gemm_batched(tb, true, batch, k, m, n, 1.0f, b.f32(), ldb, sb, dc, n, sc, 1.0f, da, m, sa);
      }
      if (b.requires_grad()) {
        float* db = b.grad_accumulator().f32();
        if (!tb)  // dB (K, N) += op(A)ᵀ (K, M) dC (M, N)
          kernels::gemm_batched(!ta, false, batch, k, n, m, 1.0f, a.f32(), lda, sa, dc, n, sc, 1.0f, db, n, sb);
        else  // dB (N, K) += dCᵀ (N, M) op(A) (M, K)
          kernels::gemm_batched(true, ta, batch, n, k, m, 1.0f, dc, n, sc, a.f32(), lda, sa, 1.0f, db, k, sb);
      }
    });
  }
  return y;
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  ShapeContract c("linear");
  if (!x.defined()) throw ShapeError("linear: 'x' expected (..., IN), got an undefined tensor");
  if (x.dtype() != DType::f32)
    throw ShapeError(std::string("linear: 'x' expected dtype float32, got ") + dtype_name(x.dtype()));
  if (x.rank() < 1) throw ShapeError("linear: 'x' expected (..., IN), got " + x.shape().str());
  c.bind("IN", x.shape()[-1]);
  c.check("weight", weight, {"OUT", "IN"});
  const bool has_bias = bias.defined();
  if (has_bias) c.check("bias", bias, {"OUT"});
  const int64_t in = c["IN"], out = c["OUT"];
  const int64_t rows = leading_rows(x.shape());

  std::vector<int64_t> dims = x.shape().dims();
  dims.back() = out;
  Tensor y = Tensor::empty(Shape(dims));  // (..., OUT), as (rows, OUT)
  // y = x Wᵀ + b (each row): one GEMM over all rows.
  detail::weight_gemm("linear", weight, true, rows, out, in, x.f32(), in, weight.f32(), in,
                      has_bias ? bias.f32() : nullptr, y.f32(), out);

  if (autodiff::needs_grad(x, weight, bias)) {  // an undefined bias never requires grad
    autodiff::record("linear", {y}, [x, weight, bias, y, rows, in, out]() mutable {
      const float* dy = y.grad().f32();  // (rows, OUT)
      // dx (rows, IN) += dy (rows, OUT) W (OUT, IN)
      if (x.requires_grad())
        kernels::gemm(false, false, rows, in, out, 1.0f, dy, out, weight.f32(), in, 1.0f, x.grad_accumulator().f32(),
                      in);
      // dW (OUT, IN) += dyᵀ (OUT, rows) x (rows, IN), deferred and stacked when rows are few
      if (weight.requires_grad()) autodiff::accumulate_weight_grad(weight, y.grad(), x);
      // db (OUT) += Σ_rows dy: the column sums of dy
      if (bias.defined() && bias.requires_grad())
        kernels::sum_columns_into(dy, rows, out, bias.grad_accumulator().f32());
    });
  }
  return y;
}

Tensor matmul(const Tensor& a, const Tensor& b, MatmulOptions options) {
  return matmul_impl("matmul", a, b, options, false);
}

Tensor bmm(const Tensor& a, const Tensor& b, MatmulOptions options) { return matmul_impl("bmm", a, b, options, true); }

}  // namespace attn
