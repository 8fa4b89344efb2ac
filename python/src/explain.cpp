// attn.models.AttnClassifier (include/attn/models/attention_classifier.h) and attn.explain
// (include/attn/explain/): the importance measures and Kendall's τ-b, for the parity tests;
// attn.models.TransformerClassifier's self-attention with rollout and flow over it.
#include <string>
#include <vector>

#include "attn/explain/importance.h"
#include "attn/explain/kendall.h"
#include "attn/explain/rollout.h"
#include "attn/models/attention_classifier.h"
#include "attn/models/transformer.h"

#include "nn_module.h"

namespace py = pybind11;

namespace {

void register_explain(py::module_& m) {
  using namespace attn;
  using models::AttnClassifier;
  attn::python::nn_submodule(m);
  py::module_ md = m.def_submodule("models", "Sequence models");
  py::class_<AttnClassifier, nn::Module>(md, "AttnClassifier")
      .def(py::init([](const std::string& config_json) {
             return new AttnClassifier(models::AttnClassifierConfig::from_json(nlohmann::json::parse(config_json)));
           }),
           py::arg("config_json"), "bilstm-attn from a JSON configuration (AttnClassifierConfig's fields)")
      .def("config_json", [](const AttnClassifier& c) { return c.config().to_json().dump(); })
      .def("logits", [](AttnClassifier& c, const Tensor& ids, const Tensor& lengths) {
        Tensor attention;
        Tensor y = c.logits(ids, lengths, &attention);
        return py::make_tuple(y, attention);
      }, py::arg("ids"), py::arg("lengths"), "(logits (B, classes), attention (B, S))");

  py::class_<models::TransformerClassifier, nn::Module>(md, "TransformerClassifier")
      .def(py::init([](const std::string& config_json) {
             return new models::TransformerClassifier(
                 models::TransformerConfig::from_json(nlohmann::json::parse(config_json)));
           }),
           py::arg("config_json"), "transformer-cls from a JSON configuration (TransformerConfig's fields)")
      .def("logits", [](models::TransformerClassifier& c, const Tensor& ids, const Tensor& lengths) {
        Tensor attention;
        Tensor y = c.logits(ids, lengths, &attention);
        return py::make_tuple(y, attention);
      }, py::arg("ids"), py::arg("lengths"), "(logits (B, classes), [CLS] attention (B, S + 1))")
      .def("self_attention", &models::TransformerClassifier::self_attention, py::arg("ids"), py::arg("lengths"),
           "per layer (B, H, S + 1, S + 1)");

  py::module_ e = m.def_submodule("explain", "Importance measures and Jain & Wallace's tests");
  e.def("sentence_layers", &explain::sentence_layers, py::arg("batch_layers"), py::arg("b"), py::arg("n"),
        "row b of per-layer (B, H, S, S) weights trimmed to n positions: per layer (H, n, n)");
  e.def("residual_attention", &explain::residual_attention, py::arg("layers"));
  e.def("attention_rollout", &explain::attention_rollout, py::arg("layers"));
  e.def("attention_flow", &explain::attention_flow, py::arg("layers"), py::arg("rows"));
  e.def("gradient_times_input", &explain::gradient_times_input, py::arg("model"), py::arg("ids"), py::arg("label"));
  e.def("leave_one_out", &explain::leave_one_out, py::arg("model"), py::arg("ids"), py::arg("label"));
  e.def("integrated_gradients", [](AttnClassifier& c, const std::vector<int32_t>& ids, int32_t label, int steps) {
    explain::IntegratedGradients r = explain::integrated_gradients(c, ids, label, steps);
    return py::make_tuple(r.attributions, r.completeness_error, r.baseline_probability);
  }, py::arg("model"), py::arg("ids"), py::arg("label"), py::arg("steps") = 50,
     "(attributions, completeness error, baseline probability)");
  e.def("kendall_tau_b", [](const std::vector<float>& x, const std::vector<float>& y) {
    explain::KendallTau r = explain::kendall_tau_b(x, y);
    return py::make_tuple(r.defined, r.tau, r.p_value);
  }, py::arg("x"), py::arg("y"), "(defined, tau, p-value)");
}

}  // namespace

ATTN_PYTHON_REGISTER(register_explain);
