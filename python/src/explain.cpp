// attn.models.AttnClassifier (include/attn/models/attention_classifier.h) and attn.explain
// (include/attn/explain/): the importance measures and Kendall's τ-b, for the parity tests;
// attn.models.TransformerClassifier's self-attention with rollout and flow over it.
#include <string>
#include <vector>

#include "attn/explain/adversarial.h"
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
      .def(
          "logits",
          [](AttnClassifier& c, const Tensor& ids, const Tensor& lengths) {
            Tensor attention;
            Tensor y = c.logits(ids, lengths, &attention);
            return py::make_tuple(y, attention);
          },
          py::arg("ids"), py::arg("lengths"), "(logits (B, classes), attention (B, S))");

  py::class_<models::TransformerClassifier, nn::Module>(md, "TransformerClassifier")
      .def(py::init([](const std::string& config_json) {
             return new models::TransformerClassifier(
                 models::TransformerConfig::from_json(nlohmann::json::parse(config_json)));
           }),
           py::arg("config_json"), "transformer-cls from a JSON configuration (TransformerConfig's fields)")
      .def(
          "logits",
          [](models::TransformerClassifier& c, const Tensor& ids, const Tensor& lengths) {
            Tensor attention;
            Tensor y = c.logits(ids, lengths, &attention);
            return py::make_tuple(y, attention);
          },
          py::arg("ids"), py::arg("lengths"), "(logits (B, classes), [CLS] attention (B, S + 1))")
      .def("self_attention", &models::TransformerClassifier::self_attention, py::arg("ids"), py::arg("lengths"),
           "per layer (B, H, S + 1, S + 1)");

  py::module_ e = m.def_submodule("explain", "Importance measures and Jain & Wallace's tests");
  e.def("sentence_layers", &explain::sentence_layers, py::arg("batch_layers"), py::arg("b"), py::arg("n"),
        "row b of per-layer (B, H, S, S) weights trimmed to n positions: per layer (H, n, n)");
  e.def("residual_attention", &explain::residual_attention, py::arg("layers"));
  e.def("attention_rollout", &explain::attention_rollout, py::arg("layers"));
  e.def("attention_flow", &explain::attention_flow, py::arg("layers"), py::arg("rows"));
  e.def("gradient_times_input", &explain::gradient_times_input, py::arg("model"), py::arg("ids"), py::arg("label"));
  e.def("leave_one_out",
        py::overload_cast<AttnClassifier&, const std::vector<int32_t>&, int32_t>(&explain::leave_one_out),
        py::arg("model"), py::arg("ids"), py::arg("label"));
  e.def(
      "explain_transformer",
      [](models::TransformerClassifier& c, const std::vector<int32_t>& ids, const std::vector<std::string>& tokens,
         int ig_steps) {
        explain::ImportanceOptions options;
        options.ig_steps = ig_steps;
        const explain::SentenceImportance r = explain::explain_sentence(c, ids, tokens, options);
        py::dict d;
        d["label"] = r.label;
        d["probability"] = r.probability;
        d["attention"] = r.attention;
        d["gradient"] = r.gradient;
        d["leave_one_out"] = r.leave_one_out;
        d["integrated_gradients"] = r.integrated_gradients;
        d["ig_completeness_error"] = r.ig_completeness_error;
        d["rollout"] = r.rollout;
        d["flow"] = r.flow;
        return d;
      },
      py::arg("model"), py::arg("ids"), py::arg("tokens"), py::arg("ig_steps") = 50,
      "transformer-cls's measures for one sentence (a dict)");
  e.def(
      "integrated_gradients",
      [](AttnClassifier& c, const std::vector<int32_t>& ids, int32_t label, int steps) {
        explain::IntegratedGradients r = explain::integrated_gradients(c, ids, label, steps);
        return py::make_tuple(r.attributions, r.completeness_error, r.baseline_probability);
      },
      py::arg("model"), py::arg("ids"), py::arg("label"), py::arg("steps") = 50,
      "(attributions, completeness error, baseline probability)");
  e.def("jensen_shannon", &explain::jensen_shannon, py::arg("a"), py::arg("b"), "JSD(a, b) in nats");
  e.def(
      "adversarial_objective",
      [](AttnClassifier& c, const std::vector<int32_t>& ids, const std::vector<float>& z, int64_t K, float epsilon,
         float hinge_weight) {
        const explain::AdversarialProblem p = explain::adversarial_problem(c, ids);
        std::vector<float> gradient;
        std::vector<float> objective = explain::adversarial_objective(p, z, K, epsilon, hinge_weight, &gradient);
        return py::make_tuple(objective, gradient, p.label, p.original);
      },
      py::arg("model"), py::arg("ids"), py::arg("z"), py::arg("K"), py::arg("epsilon"), py::arg("hinge_weight"),
      "Jain & Wallace's objective for K candidate logits z (K * n, row-major) with the encoder states fixed: "
      "(objective (K), its gradient (K * n), the predicted class, its probability)");
  e.def(
      "adversarial_attention",
      [](AttnClassifier& c, const std::vector<int32_t>& ids, int candidates, int steps) {
        explain::AdversarialOptions o;
        o.candidates = candidates;
        o.steps = steps;
        const explain::AdversarialResult r = explain::adversarial_attention(c, ids, o);
        py::dict d;
        d["attention"] = r.attention;
        d["jsd"] = r.jsd;
        d["delta"] = r.delta;
        d["max_attention"] = r.max_attention;
        return d;
      },
      py::arg("model"), py::arg("ids"), py::arg("candidates") = 5, py::arg("steps") = 500,
      "the best admissible adversarial attention (a dict)");
  e.def(
      "kendall_tau_b",
      [](const std::vector<float>& x, const std::vector<float>& y) {
        explain::KendallTau r = explain::kendall_tau_b(x, y);
        return py::make_tuple(r.defined, r.tau, r.p_value);
      },
      py::arg("x"), py::arg("y"), "(defined, tau, p-value)");
}

}  // namespace

ATTN_PYTHON_REGISTER(register_explain);
