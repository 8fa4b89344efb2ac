// Monotonic attention (Raffel et al. 2017) and MoChA (Chiu & Raffel 2018)
// (include/attn/ops/monotonic.h): additive_energy, monotonic_alignment, mocha_chunk_attention,
// monotonic_select, monotonic_hard_weights.
#include "attn/ops/monotonic.h"
#include "bindings.h"
#include "optional.h"

namespace py = pybind11;

ATTN_PYTHON_REGISTER([](py::module_& m) {
  using attn::Tensor;
  m.def(
      "additive_energy",
      [](const Tensor& query, const Tensor& projected_keys, const Tensor& w_q, const Tensor& bias, const Tensor& v,
         const std::optional<Tensor>& r, const Tensor& lengths) {
        return attn::additive_energy(query, projected_keys, w_q, bias, v, attn::python::opt(r), lengths);
      },
      py::arg("query"), py::arg("projected_keys"), py::arg("w_q"), py::arg("bias"), py::arg("v"), py::arg("r"),
      py::arg("lengths"), "e = v^T tanh(W_q q + k_s + b) + r (B, S), 0 past each row's length; r (1) or None");
  m.def("monotonic_alignment", &attn::monotonic_alignment, py::arg("energies"), py::arg("prev"), py::arg("lengths"),
        "Raffel's expected alignment from energies (B, S) and the previous alignment (B, S)");
  m.def("mocha_chunk_attention", &attn::mocha_chunk_attention, py::arg("alpha"), py::arg("chunk_energies"),
        py::arg("lengths"), py::arg("chunk"), "Chiu & Raffel's expected chunk attention beta (B, S)");
  m.def("monotonic_select", &attn::monotonic_select, py::arg("energies"), py::arg("lengths"), py::arg("start"),
        "Hard monotonic attention: int32 (B), the first j >= start with energy > 0, or -1");
  m.def("monotonic_hard_weights", &attn::monotonic_hard_weights, py::arg("selected"), py::arg("chunk_energies"),
        py::arg("chunk"), "Softmax of the chunk energies over [j - W + 1, j] at each stop (W = 1: one-hot)");
});
