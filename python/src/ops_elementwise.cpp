#include "attn/ops/elementwise.h"
#include "bindings.h"

namespace py = pybind11;

ATTN_PYTHON_REGISTER([](py::module_& m) {
  using namespace attn;
  m.def("add", &attn::add, py::arg("a"), py::arg("b"));
  m.def("mul", &attn::mul, py::arg("a"), py::arg("b"));
  m.def("scale", &attn::scale, py::arg("x"), py::arg("alpha"));
  m.def("tanh", &attn::tanh, py::arg("x"));
  m.def("sigmoid", &attn::sigmoid, py::arg("x"));
  m.def("exp", &attn::exp, py::arg("x"));
  m.def("log", &attn::log, py::arg("x"), "ln x for x >= 0; a negative or NaN entry is a ValueError");
  m.def("relu", &attn::relu, py::arg("x"));
  m.def("gelu", &attn::gelu, py::arg("x"));
});
