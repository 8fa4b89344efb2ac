// dropout (include/attn/ops/dropout.h).
#include "attn/ops/dropout.h"
#include "bindings.h"

namespace py = pybind11;

ATTN_PYTHON_REGISTER([](py::module_& m) {
  m.def("dropout", &attn::dropout, py::arg("x"), py::arg("p"), py::arg("seed"), py::arg("training") = true,
        "Inverted dropout: keeps element i iff uniform_at(seed, i) >= p, scaled by 1 / (1 - p)");
});
