// The RNN attention family (include/attn/ops/attention.h): additive_project_keys,
// additive_attention (Bahdanau), luong_attention (dot / general / concat), location_attention.
// Options structs become keyword arguments with the C++ defaults; results are
// AttentionResult objects (.context, .weights) that also unpack as `context, weights = ...`.
#include "attn/ops/attention.h"

#include <string>

#include "optional.h"

namespace py = pybind11;

namespace {

attn::LuongScore to_luong_score(const py::object& score) {
  if (py::isinstance<attn::LuongScore>(score)) return score.cast<attn::LuongScore>();
  const auto name = score.cast<std::string>();
  if (name == "dot") return attn::LuongScore::dot;
  if (name == "general") return attn::LuongScore::general;
  if (name == "concat") return attn::LuongScore::concat;
  throw attn::ValueError("luong_attention: unknown score '" + name + "' (valid: dot, general, concat)");
}

}  // namespace

namespace {

void register_attention(py::module_& m) {
  using namespace attn;
  using attn::python::opt;
  using attn::python::or_none;
  using OT = std::optional<Tensor>;

  py::class_<AttentionResult>(m, "AttentionResult")
      .def_property_readonly("context", [](const AttentionResult& r) { return r.context; })
      .def_property_readonly("weights", [](const AttentionResult& r) { return or_none(r.weights); })
      .def("__len__", [](const AttentionResult&) { return 2; })
      .def("__iter__", [](const AttentionResult& r) {
        return py::iter(py::make_tuple(r.context, or_none(r.weights)));
      });

  py::enum_<LuongScore>(m, "LuongScore")
      .value("dot", LuongScore::dot)
      .value("general", LuongScore::general)
      .value("concat", LuongScore::concat);

  m.def("additive_project_keys", &attn::additive_project_keys, py::arg("keys"), py::arg("w_k"),
        "k̃ = K W_kᵀ: keys (B, S, E), w_k (A, E) -> (B, S, A)");
  m.def("additive_attention",
        [](const Tensor& query, const Tensor& projected_keys, const Tensor& values, const Tensor& w_q,
           const Tensor& bias, const Tensor& v, const Tensor& lengths, bool normalize, const OT& g, float temperature,
           bool need_weights) {
          return additive_attention(query, projected_keys, values, w_q, bias, v, lengths,
                                    AdditiveOptions{.normalize = normalize, .g = opt(g), .temperature = temperature,
                                                    .need_weights = need_weights});
        },
        py::arg("query"), py::arg("projected_keys"), py::arg("values"), py::arg("w_q"), py::arg("bias"), py::arg("v"),
        py::arg("lengths"), py::kw_only(), py::arg("normalize") = false, py::arg("g") = py::none(),
        py::arg("temperature") = 1.0f, py::arg("need_weights") = true,
        "Bahdanau attention: e = vᵀ tanh(W_q q + k̃ + b) (v -> g v/‖v‖ when normalize)");
  m.def("luong_attention",
        [](const Tensor& query, const Tensor& keys, const Tensor& values, const Tensor& lengths, const py::object& score,
           const OT& w, const OT& v, const OT& scale, float temperature, bool need_weights) {
          return luong_attention(query, keys, values, lengths,
                                 LuongOptions{.score = to_luong_score(score), .w = opt(w), .v = opt(v),
                                              .scale = opt(scale), .temperature = temperature,
                                              .need_weights = need_weights});
        },
        py::arg("query"), py::arg("keys"), py::arg("values"), py::arg("lengths"), py::kw_only(),
        py::arg("score") = "dot", py::arg("w") = py::none(), py::arg("v") = py::none(), py::arg("scale") = py::none(),
        py::arg("temperature") = 1.0f, py::arg("need_weights") = true,
        "Luong attention; score 'dot' | 'general' (w (D, E)) | 'concat' (w (A, D+E), v (A))");
  m.def("location_attention",
        [](const Tensor& query, const Tensor& values, const Tensor& w_a, const OT& b_a, const Tensor& lengths,
           float temperature, bool need_weights) {
          return location_attention(query, values, w_a, opt(b_a), lengths,
                                    LocationOptions{.temperature = temperature, .need_weights = need_weights});
        },
        py::arg("query"), py::arg("values"), py::arg("w_a"), py::arg("b_a"), py::arg("lengths"), py::kw_only(),
        py::arg("temperature") = 1.0f, py::arg("need_weights") = true,
        "Luong location attention: a = softmax over the first S positions of (W_a q + b_a)");
}

}  // namespace

ATTN_PYTHON_REGISTER(register_attention);
