// softmax, log_softmax with an optional keep-mask (include/attn/ops/softmax.h).
#include "attn/ops/softmax.h"

#include "optional.h"

namespace py = pybind11;

ATTN_PYTHON_REGISTER([](py::module_& m) {
  using namespace attn;
  using attn::python::opt;
  m.def("softmax", [](const Tensor& x, const std::optional<Tensor>& mask) { return softmax(x, opt(mask)); },
        py::arg("x"), py::arg("mask") = py::none(), "Softmax over the last dimension; mask int32 of x's shape, nonzero = keep");
  m.def("log_softmax", [](const Tensor& x, const std::optional<Tensor>& mask) { return log_softmax(x, opt(mask)); },
        py::arg("x"), py::arg("mask") = py::none(), "Log-softmax over the last dimension; mask as softmax");
});
