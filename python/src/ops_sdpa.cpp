// sdpa (include/attn/ops/sdpa.h): SdpaOptions as keyword arguments; the result unpacks as
// `out, weights = attn.sdpa(q, k, v, ...)` (weights None unless need_weights).
#include <string>

#include "attn/ops/sdpa.h"
#include "optional.h"

namespace py = pybind11;

namespace {

// causal: False / True (lower_right, attn's convention) / "lower_right" / "upper_left";
// is_causal=True is torch's flag (upper_left). Both given is a ValueError.
void set_causal(attn::SdpaOptions& o, const py::object& causal, bool is_causal) {
  using attn::CausalAlign;
  if (py::isinstance<py::str>(causal)) {
    const std::string name = causal.cast<std::string>();
    if (name != "lower_right" && name != "upper_left")
      throw attn::ValueError("sdpa: causal must be False, True, 'lower_right' or 'upper_left', got '" + name + "'");
    o.causal = true;
    o.causal_align = name == "upper_left" ? CausalAlign::upper_left : CausalAlign::lower_right;
  } else if (py::isinstance<py::bool_>(causal)) {
    o.causal = causal.cast<bool>();
  } else {
    throw attn::ValueError("sdpa: causal must be False, True, 'lower_right' or 'upper_left', got " +
                           py::repr(causal).cast<std::string>());
  }
  if (is_causal) {
    if (o.causal)
      throw attn::ValueError(
          "sdpa: give causal (attn's, lower_right by default) or is_causal (torch's, upper_left), not both");
    o.causal = true;
    o.causal_align = CausalAlign::upper_left;
  }
}

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

  m.def(
      "sdpa",
      [](const Tensor& q, const Tensor& k, const Tensor& v, const OT& key_lengths, const OT& key_padding_mask,
         const py::object& causal, const OT& bias, float scale, float temperature, bool need_weights, bool is_causal) {
        SdpaOptions o;
        o.key_lengths = opt(key_lengths);
        o.key_padding_mask = opt(key_padding_mask);
        set_causal(o, causal, is_causal);
        o.bias = opt(bias);
        o.scale = scale;
        o.temperature = temperature;
        o.need_weights = need_weights;
        return sdpa(q, k, v, o);
      },
      py::arg("q"), py::arg("k"), py::arg("v"), py::kw_only(), py::arg("key_lengths") = py::none(),
      py::arg("key_keep_mask") = py::none(), py::arg("causal") = false, py::arg("bias") = py::none(),
      py::arg("scale") = 0.0f, py::arg("temperature") = 1.0f, py::arg("need_weights") = false,
      py::arg("is_causal") = false,
      "softmax(q kᵀ · scale / temperature + bias + masks) v; q (B, H, T, Dh), k (B, H, S, Dh), v (B, H, S, Dv). "
      "bias (T, S), (B·H, T, S) or (B, H, T, S), may require grad. causal: True / 'lower_right' (query t sees "
      "keys s <= t + S - T; the KV-cache step's) or 'upper_left' (s <= t); is_causal=True is torch's (upper_left)");
}

}  // namespace

ATTN_PYTHON_REGISTER(register_sdpa);
