// concat, split, stack_rows, transpose_last2, pair_frames (include/attn/ops/shape_ops.h) and the row
// selection ops where_rows, transpose_01, gather_rows (include/attn/ops/select.h).
#include "attn/ops/select.h"
#include "attn/ops/shape_ops.h"
#include "optional.h"

namespace py = pybind11;

ATTN_PYTHON_REGISTER([](py::module_& m) {
  using namespace attn;
  using attn::python::opt;
  m.def("concat", &attn::concat, py::arg("parts"), "Concatenates along the last dimension");
  m.def("split", &attn::split, py::arg("x"), py::arg("sizes"), "Splits the last dimension into parts");
  m.def("stack_rows", &attn::stack_rows, py::arg("parts"), "Stacks T tensors (...) into (T, ...)");
  m.def(
      "reshape", [](const Tensor& x, const std::vector<int64_t>& shape) { return attn::reshape(x, Shape(shape)); },
      py::arg("x"), py::arg("shape"), "A copy of x with dimensions `shape` (same numel), differentiable");
  m.def("transpose_last2", &attn::transpose_last2, py::arg("x"), "(..., M, N) -> (..., N, M)");
  m.def("pair_frames", &attn::pair_frames, py::arg("x"), "(S, B, E) -> (ceil(S/2), B, 2E): adjacent time steps joined");
  m.def(
      "where_rows",
      [](const Tensor& keep, const Tensor& a, const std::optional<Tensor>& b) { return where_rows(keep, a, opt(b)); },
      py::arg("keep"), py::arg("a"), py::arg("b") = py::none(), "y[i] = keep[i] ? a[i] : b[i] (b None: zeros)");
  m.def("transpose_01", &attn::transpose_01, py::arg("x"), "(N0, N1, ...) -> (N1, N0, ...)");
  m.def("gather_rows", &attn::gather_rows, py::arg("x"), py::arg("index"), "y[i] = x[index[i]]");
});
