// attn.torch's backward of additive_attention from the saved forward, instead of recomputing
// the forward on attn's tape: the torch wrapper keeps the weights its forward returned, and
// this runs src/ops/additive_attention.cpp's backward kernels on them (the same kernels, in
// the same order, for its defaults: no normalize, temperature 1, no dropout, no keep-mask).
//   u = Q W_qᵀ + b (one GEMM, recomputed: O(B·T·A·D), cheap next to the O(B·T·S·A) scores)
//   da = dweights + dc · values;  de = a (da - Σ a da);  then the additive scores' backward.
// Shapes: query (B, D) or (B, T, D), projected_keys (B, S, A), values (B, S, E), w_q (A, D),
// bias (A), v (A), lengths int32 (B) or None, weights (B[, T], S), dcontext (B[, T], E),
// dweights like weights or None -> (dquery, dprojected_keys, dvalues, dw_q, dbias, dv).
#include "attn/kernels/attention.h"
#include "attn/kernels/blas.h"
#include "attn/kernels/normalizer.h"
#include "attn/kernels/reduce.h"

#include <string>

#include "optional.h"

namespace py = pybind11;

namespace attn::python {
namespace {

void expect(bool ok, const std::string& what) {
  if (!ok) throw ShapeError("additive_attention backward: " + what);
}

py::tuple additive_attention_backward(const Tensor& query, const Tensor& pk, const Tensor& values, const Tensor& w_q,
                                      const Tensor& bias, const Tensor& v, const std::optional<Tensor>& lengths_in,
                                      const Tensor& weights, const Tensor& dcontext,
                                      const std::optional<Tensor>& dweights) {
  expect(pk.rank() == 3 && values.rank() == 3 && w_q.rank() == 2, "projected_keys / values / w_q ranks");
  const int64_t B = pk.dim(0), S = pk.dim(1), A = pk.dim(2), E = values.dim(2), D = w_q.dim(1);
  expect(query.rank() >= 2 && query.dim(0) == B && query.dim(-1) == D && query.numel() % (B * D) == 0, "query shape");
  const int64_t T = query.numel() / (B * D), N = B * T;
  expect(values.dim(0) == B && values.dim(1) == S && w_q.dim(0) == A && bias.numel() == A && v.numel() == A,
         "values / w_q / bias / v shapes");
  expect(weights.numel() == N * S && dcontext.numel() == N * E, "weights / dcontext sizes");
  expect(!dweights || dweights->numel() == N * S, "dweights size");
  Tensor lengths = lengths_in ? *lengths_in : Tensor::empty({B}, DType::i32);  // None: every row has S keys
  if (!lengths_in)
    for (int64_t b = 0; b < B; ++b) lengths.i32()[b] = static_cast<int32_t>(S);
  expect(lengths.dtype() == DType::i32 && lengths.numel() == B, "lengths must be int32 (B)");
  for (int64_t b = 0; b < B; ++b)
    expect(lengths.i32()[b] >= 0 && lengths.i32()[b] <= S, "lengths must be in [0, S]");

  // u = Q W_qᵀ + b                                                   // (N, A)
  Tensor u = Tensor::empty({N, A});
  kernels::gemm(false, true, N, A, D, 1.0f, query.f32(), D, w_q.f32(), D, 0.0f, u.f32(), A);
  kernels::attention_add_bias_rows(u.f32(), bias.f32(), N, A);
  // da = dweights + dc · values;  dvalues += Σ_t a dc
  Tensor da = dweights ? dweights->clone() : Tensor::zeros({N * S});
  Tensor dvalues = Tensor::zeros(values.shape());
  kernels::attention_context_backward(weights.f32(), values.f32(), dcontext.f32(), lengths.i32(), B, T, S, E,
                                      da.f32(), dvalues.f32());
  Tensor de = Tensor::zeros({N * S});
  const kernels::NormalizerRows rows{.rows = N, .n = S, .group = T, .extents = lengths.i32()};
  kernels::normalizer_backward(kernels::Normalizer{}, rows, nullptr, weights.f32(), da.f32(), de.f32());
  Tensor du = Tensor::zeros({N, A}), dpk = Tensor::zeros(pk.shape()), dv_partial = Tensor::zeros({B, A});
  kernels::attention_additive_scores_backward(u.f32(), pk.f32(), v.f32(), de.f32(), lengths.i32(), B, T, S, A,
                                              du.f32(), dpk.f32(), dv_partial.f32());
  // u = Q W_qᵀ + b:  dQ = dU W_q,  dW_q = dUᵀ Q,  db = Σ_rows dU;  dv = Σ_b dv_partial (in order)
  Tensor dq = Tensor::empty(query.shape()), dw_q = Tensor::empty(w_q.shape());
  Tensor dbias = Tensor::zeros(bias.shape()), dv = Tensor::zeros(v.shape());
  kernels::gemm(false, false, N, D, A, 1.0f, du.f32(), A, w_q.f32(), D, 0.0f, dq.f32(), D);
  kernels::gemm(true, false, A, D, N, 1.0f, du.f32(), A, query.f32(), D, 0.0f, dw_q.f32(), D);
  kernels::sum_columns_into(du.f32(), N, A, dbias.f32());
  kernels::sum_columns_into(dv_partial.f32(), B, A, dv.f32());
  return py::make_tuple(dq, dpk, dvalues, dw_q, dbias, dv);
}

void register_torch_backward(py::module_& m) {
  m.def("_additive_attention_backward", &additive_attention_backward, py::arg("query"), py::arg("projected_keys"),
        py::arg("values"), py::arg("w_q"), py::arg("bias"), py::arg("v"), py::arg("lengths"), py::arg("weights"),
        py::arg("dcontext"), py::arg("dweights"),
        "attn.torch's additive_attention backward from the saved forward weights (no recomputation)");
}

}  // namespace
}  // namespace attn::python

ATTN_PYTHON_REGISTER(attn::python::register_torch_backward);
