// Local attention (include/attn/ops/local_attention.h) and hard attention + REINFORCE
// (include/attn/ops/hard_attention.h). Options become keyword arguments with the C++ defaults.
// local_attention returns an AttentionResult (registered in ops_attention.cpp; unpacks as
// `context, weights = ...`). hard_attention_sample takes a seed instead of an attn::Rng: each
// call draws from a fresh generator seeded with it.
#include <optional>
#include <string>

#include "attn/nn/attention_init.h"
#include "attn/ops/hard_attention.h"
#include "attn/ops/local_attention.h"
#include "optional.h"

namespace py = pybind11;

namespace {

attn::LocalMode to_local_mode(const std::string& name) {
  if (name == "monotonic" || name == "local-m" || name == "m") return attn::LocalMode::monotonic;
  if (name == "predictive" || name == "local-p" || name == "p") return attn::LocalMode::predictive;
  throw attn::ValueError("local_attention: unknown mode '" + name +
                         "' (valid: monotonic / local-m, predictive / local-p)");
}

attn::LuongScore to_local_score(const py::object& score) {
  if (py::isinstance<attn::LuongScore>(score)) return score.cast<attn::LuongScore>();
  const auto name = score.cast<std::string>();
  if (name == "dot") return attn::LuongScore::dot;
  if (name == "general") return attn::LuongScore::general;
  if (name == "concat") return attn::LuongScore::concat;  // rejected by the op with its own message
  throw attn::ValueError("local_attention: unknown score '" + name + "' (valid: dot, general)");
}

void register_local_attention(py::module_& m) {
  using namespace attn;
  using attn::python::opt;
  using OT = std::optional<Tensor>;

  m.def(
      "local_attention",
      [](const Tensor& query, const Tensor& keys, const Tensor& values, const OT& lengths, const std::string& mode,
         int window, const py::object& score, const OT& w, const OT& positions, const OT& w_p, const OT& v_p,
         float temperature, bool need_weights, const OT& key_padding_mask, float dropout, bool training,
         uint64_t dropout_seed) {
        Rng rng(dropout_seed);
        LocalOptions o;
        o.mode = to_local_mode(mode);
        o.window = window;
        o.score = to_local_score(score);
        o.w = opt(w);
        o.positions = opt(positions);
        o.w_p = opt(w_p);
        o.v_p = opt(v_p);
        o.temperature = temperature;
        o.need_weights = need_weights;
        o.key_padding_mask = opt(key_padding_mask);
        o.dropout = dropout;
        o.training = training;
        o.rng = &rng;
        return local_attention(query, keys, values, opt(lengths), o);
      },
      py::arg("query"), py::arg("keys"), py::arg("values"), py::arg("lengths") = py::none(), py::kw_only(),
      py::arg("mode") = "monotonic", py::arg("window") = 10, py::arg("score") = "general", py::arg("w") = py::none(),
      py::arg("positions") = py::none(), py::arg("w_p") = py::none(), py::arg("v_p") = py::none(),
      py::arg("temperature") = 1.0f, py::arg("need_weights") = true, py::arg("key_keep_mask") = py::none(),
      py::arg("dropout") = 0.0f, py::arg("training") = true, py::arg("dropout_seed") = 0,
      "Luong local attention: mode 'monotonic' (local-m, p_t = t or positions) | 'predictive' (local-p, "
      "p_t = L sigmoid(v_p . tanh(W_p h_t)), Gaussian sigma = window / 2); score 'dot' | 'general' (w (D, E)); "
      "key_keep_mask int32 (B, S), nonzero = keep (attn.nn.MultiheadAttention takes PyTorch's key_padding_mask)");
  m.def(
      "local_attention_init",
      [](const std::string& mode, const py::object& score, int64_t D, int64_t E, int64_t A, uint64_t seed) {
        Rng rng(seed);
        const attn::nn::LocalParams p =
            attn::nn::local_attention_init(to_local_mode(mode), to_local_score(score), D, E, A, rng);
        py::dict d;
        if (p.w.defined()) d["w"] = p.w;
        if (p.w_p.defined()) d["w_p"] = p.w_p;
        if (p.v_p.defined()) d["v_p"] = p.v_p;
        return d;
      },
      py::arg("mode"), py::arg("score"), py::arg("D"), py::arg("E"), py::arg("A") = 0, py::kw_only(),
      py::arg("seed") = 0,
      "Xavier-initialised local attention parameters: dict (general: w (D, E); local-p: w_p (A, D), v_p (A))");

  py::class_<HardAttentionSample>(m, "HardAttentionSample")
      .def_readonly("positions", &HardAttentionSample::positions)
      .def_readonly("context", &HardAttentionSample::context)
      .def_readonly("log_prob", &HardAttentionSample::log_prob)
      .def("__len__", [](const HardAttentionSample&) { return 3; })
      .def("__iter__",
           [](const HardAttentionSample& h) { return py::iter(py::make_tuple(h.positions, h.context, h.log_prob)); });
  m.def(
      "hard_attention_sample",
      [](const Tensor& weights, const Tensor& values, bool training, uint64_t seed) {
        Rng rng(seed);
        return hard_attention_sample(weights, values, training, rng);
      },
      py::arg("weights"), py::arg("values"), py::kw_only(), py::arg("training") = true, py::arg("seed") = 0,
      "One source position per row: sampled from weights (training) or the argmax; returns "
      "(positions, context, log_prob)");

  py::class_<ReinforceBaseline>(m, "ReinforceBaseline")
      .def(py::init<float, float>(), py::arg("decay") = 0.9f, py::arg("value") = 0.0f)
      .def_readwrite("decay", &ReinforceBaseline::decay)
      .def_readwrite("value", &ReinforceBaseline::value)
      .def_readonly("updates", &ReinforceBaseline::updates)
      .def("update", py::overload_cast<float>(&ReinforceBaseline::update), py::arg("reward"))
      .def("update", py::overload_cast<const Tensor&>(&ReinforceBaseline::update), py::arg("rewards"));
  m.def(
      "reinforce_loss",
      [](const Tensor& log_probs, const Tensor& rewards, const ReinforceBaseline& baseline, float entropy_bonus,
         const OT& weights_for_entropy) {
        return reinforce_loss(log_probs, rewards, baseline, entropy_bonus, opt(weights_for_entropy));
      },
      py::arg("log_probs"), py::arg("rewards"), py::arg("baseline"), py::kw_only(), py::arg("entropy_bonus") = 0.0f,
      py::arg("weights_for_entropy") = py::none(),
      "REINFORCE surrogate: -mean((r - b) log_probs) - entropy_bonus * mean(H(weights_for_entropy))");
}

}  // namespace

ATTN_PYTHON_REGISTER(register_local_attention);
