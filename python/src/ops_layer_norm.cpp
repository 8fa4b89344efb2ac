// layer_norm (include/attn/ops/layer_norm.h).
#include "attn/ops/layer_norm.h"
#include "optional.h"

namespace py = pybind11;

ATTN_PYTHON_REGISTER([](py::module_& m) {
  using namespace attn;
  using attn::python::opt;
  m.def(
      "layer_norm",
      [](const Tensor& x, const std::optional<Tensor>& gamma, const std::optional<Tensor>& beta, float eps) {
        return layer_norm(x, opt(gamma), opt(beta), LayerNormOptions{.eps = eps});
      },
      py::arg("x"), py::arg("gamma") = py::none(), py::arg("beta") = py::none(), py::kw_only(), py::arg("eps") = 1e-5f,
      "Layer normalisation over the last dimension; gamma, beta (D) or None");
});
