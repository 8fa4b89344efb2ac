// sdpa (include/attn/ops/sdpa.h): SdpaOptions as keyword arguments; the result unpacks as
// `out, weights = attn.sdpa(q, k, v, ...)` (weights None unless need_weights).
#include "attn/ops/sdpa.h"

#include "optional.h"

namespace py = pybind11;

namespace {

void register_sdpa(py::module_& m) {
  using namespace attn;
  using attn::python::opt;
  using attn::python::or_none;
  using OT = std::optional<Tensor>;

  py::class_<SdpaResult>(m, "SdpaResult")
      .def_property_readonly("out", [](const SdpaResult& r) { return r.out; })
      .def_property_readonly("weights", [](const SdpaResult& r) { return or_none(r.weights); })
      .def("__len__", [](const SdpaResult&) { return 2; })
      .def("__iter__", [](const SdpaResult& r) { return py::iter(py::make_tuple(r.out, or_none(r.weights))); });

  m.def("sdpa",
        [](const Tensor& q, const Tensor& k, const Tensor& v, const OT& key_lengths, const OT& key_padding_mask,
           bool causal, const OT& bias, float scale, float temperature, bool need_weights) {
          SdpaOptions o;
          o.key_lengths = opt(key_lengths);
          o.key_padding_mask = opt(key_padding_mask);
          o.causal = causal;
          o.bias = opt(bias);
          o.scale = scale;
          o.temperature = temperature;
          o.need_weights = need_weights;
          return sdpa(q, k, v, o);
        },
        py::arg("q"), py::arg("k"), py::arg("v"), py::kw_only(), py::arg("key_lengths") = py::none(),
        py::arg("key_keep_mask") = py::none(), py::arg("causal") = false, py::arg("bias") = py::none(),
        py::arg("scale") = 0.0f, py::arg("temperature") = 1.0f, py::arg("need_weights") = false,
        "softmax(q kᵀ · scale / temperature + bias + masks) v; q (B, H, T, Dh), k (B, H, S, Dh), v (B, H, S, Dv)");
}

}  // namespace

ATTN_PYTHON_REGISTER(register_sdpa);
