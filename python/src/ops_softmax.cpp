// softmax, log_softmax and the sparse normalisers with an optional keep-mask (include/attn/ops/softmax.h).
#include "attn/ops/softmax.h"
#include "optional.h"

namespace py = pybind11;

ATTN_PYTHON_REGISTER([](py::module_& m) {
  using namespace attn;
  using attn::python::opt;
  m.def(
      "softmax", [](const Tensor& x, const std::optional<Tensor>& mask) { return softmax(x, opt(mask)); }, py::arg("x"),
      py::arg("mask") = py::none(), "Softmax over the last dimension; mask int32 of x's shape, nonzero = keep");
  m.def(
      "log_softmax", [](const Tensor& x, const std::optional<Tensor>& mask) { return log_softmax(x, opt(mask)); },
      py::arg("x"), py::arg("mask") = py::none(), "Log-softmax over the last dimension; mask as softmax");
  m.def(
      "sparsemax", [](const Tensor& x, const std::optional<Tensor>& mask) { return sparsemax(x, opt(mask)); },
      py::arg("x"), py::arg("mask") = py::none(),
      "Sparsemax over the last dimension (exact, sort-based): exact zeros below the threshold; mask as softmax");
  m.def(
      "entmax15", [](const Tensor& x, const std::optional<Tensor>& mask) { return entmax15(x, opt(mask)); },
      py::arg("x"), py::arg("mask") = py::none(),
      "1.5-entmax over the last dimension (exact, sort-based); mask as softmax");
  m.def(
      "entmax_bisect",
      [](const Tensor& x, float alpha, const std::optional<Tensor>& mask) {
        return entmax_bisect(x, alpha, opt(mask));
      },
      py::arg("x"), py::arg("alpha") = 1.5f, py::arg("mask") = py::none(),
      "alpha-entmax over the last dimension by bisection, alpha > 1 (2: sparsemax); mask as softmax");
});
