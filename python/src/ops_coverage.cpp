// add_outer, coverage_overlap (include/attn/ops/coverage.h).
#include "attn/ops/coverage.h"
#include "bindings.h"

namespace py = pybind11;

ATTN_PYTHON_REGISTER([](py::module_& m) {
  m.def("add_outer", &attn::add_outer, py::arg("x"), py::arg("c"), py::arg("w"),
        "Coverage term: x (B, S, A) + c (B, S) outer w (A) -> (B, S, A)");
  m.def("coverage_overlap", &attn::coverage_overlap, py::arg("a"), py::arg("c"),
        "One step's coverage loss: sum_i min(a_i, c_i), a and c (B, S) -> (B)");
});
