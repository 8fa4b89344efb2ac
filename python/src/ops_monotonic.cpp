// Monotonic attention (Raffel et al. 2017) and MoChA (Chiu & Raffel 2018)
// (include/attn/ops/monotonic.h): additive_energy, monotonic_alignment, mocha_chunk_attention,
// monotonic_select, monotonic_hard_weights, monotonic_online_step.
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
  m.def(
      "monotonic_online_step",
      [](const Tensor& query, const Tensor& values, const Tensor& lengths, const Tensor& start,
         const Tensor& projected_keys, const Tensor& w_q, const Tensor& bias, const Tensor& v,
         const std::optional<Tensor>& r, const std::optional<Tensor>& chunk_projected_keys,
         const std::optional<Tensor>& chunk_w_q, const std::optional<Tensor>& chunk_bias,
         const std::optional<Tensor>& chunk_v, int64_t chunk, bool need_weights) {
        attn::MonotonicOnlineOptions o;
        o.selection = {projected_keys, w_q, bias, v, attn::python::opt(r)};
        o.chunk = {attn::python::opt(chunk_projected_keys), attn::python::opt(chunk_w_q), attn::python::opt(chunk_bias),
                   attn::python::opt(chunk_v), Tensor()};
        o.chunk_width = chunk;
        o.need_weights = need_weights;
        const attn::MonotonicOnlineResult out = attn::monotonic_online_step(query, values, lengths, start, o);
        return py::make_tuple(out.selected, out.context,
                              out.weights.defined() ? py::cast(out.weights) : py::object(py::none()));
      },
      py::arg("query"), py::arg("values"), py::arg("lengths"), py::arg("start"), py::arg("projected_keys"),
      py::arg("w_q"), py::arg("bias"), py::arg("v"), py::arg("r") = py::none(),
      py::arg("chunk_projected_keys") = py::none(), py::arg("chunk_w_q") = py::none(),
      py::arg("chunk_bias") = py::none(), py::arg("chunk_v") = py::none(), py::arg("chunk") = 1,
      py::arg("need_weights") = false,
      "One step of hard monotonic (MoChA with the chunk_ energy) inference, scoring only the frames it reads: "
      "(stops int32 (B), -1 for none; context (B, E); weights (B, S) or None)");
});
