// linear, matmul, bmm (include/attn/ops/linear.h). MatmulOptions as keyword arguments.
#include "attn/ops/linear.h"
#include "optional.h"

namespace py = pybind11;

ATTN_PYTHON_REGISTER([](py::module_& m) {
  using namespace attn;
  using attn::python::opt;
  m.def(
      "linear",
      [](const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias) {
        return linear(x, weight, opt(bias));
      },
      py::arg("x"), py::arg("weight"), py::arg("bias") = py::none(), "y = x Wᵀ + b; x (..., IN), weight (OUT, IN)");
  m.def(
      "matmul",
      [](const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b) {
        return matmul(a, b, MatmulOptions{.transpose_a = transpose_a, .transpose_b = transpose_b});
      },
      py::arg("a"), py::arg("b"), py::kw_only(), py::arg("transpose_a") = false, py::arg("transpose_b") = false,
      "c (M, N) = op(a) op(b)");
  m.def(
      "bmm",
      [](const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b) {
        return bmm(a, b, MatmulOptions{.transpose_a = transpose_a, .transpose_b = transpose_b});
      },
      py::arg("a"), py::arg("b"), py::kw_only(), py::arg("transpose_a") = false, py::arg("transpose_b") = false,
      "c (B, M, N) = op(a[i]) op(b[i])");
});
