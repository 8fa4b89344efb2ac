// sum, mean, sum_last, mean_last (include/attn/ops/reduce.h).
#include "attn/ops/reduce.h"
#include "bindings.h"

namespace py = pybind11;

ATTN_PYTHON_REGISTER([](py::module_& m) {
  m.def("sum", &attn::sum, py::arg("x"), "Sum of all elements -> shape ()");
  m.def("mean", &attn::mean, py::arg("x"), "Mean of all elements -> shape ()");
  m.def("sum_last", &attn::sum_last, py::arg("x"), "Sum over the last dimension");
  m.def("mean_last", &attn::mean_last, py::arg("x"), "Mean over the last dimension");
});
