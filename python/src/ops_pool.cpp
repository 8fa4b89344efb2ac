// masked_max_time, masked_mean_time (include/attn/ops/pool.h).
#include "attn/ops/pool.h"
#include "bindings.h"

namespace py = pybind11;

ATTN_PYTHON_REGISTER([](py::module_& m) {
  m.def("masked_max_time", &attn::masked_max_time, py::arg("x"), py::arg("lengths"),
        "Max over the real time steps: x (B, S, E), lengths (B) int32 in [0, S] -> (B, E)");
  m.def("masked_mean_time", &attn::masked_mean_time, py::arg("x"), py::arg("lengths"),
        "Mean over the real time steps: x (B, S, E), lengths (B) int32 in [0, S] -> (B, E)");
  m.def(
      "masked_max_time_with_indices",
      [](const attn::Tensor& x, const attn::Tensor& lengths) {
        attn::MaxTimeResult r = attn::masked_max_time_with_indices(x, lengths);
        return py::make_tuple(r.values, r.argmax);
      },
      py::arg("x"), py::arg("lengths"), "(values (B, E), argmax (B, E) int32, -1 for length 0)");
});
