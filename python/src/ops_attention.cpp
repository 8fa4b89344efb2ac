// The RNN attention family (include/attn/ops/attention.h): additive_project_keys,
// additive_attention (Bahdanau), luong_attention (dot / general / concat), location_attention,
// location_aware_features and location_aware_attention (Chorowski et al. 2015).
// Options structs become keyword arguments with the C++ defaults; results are
// AttentionResult objects (.context, .weights) that also unpack as `context, weights = ...`.
// Common keywords: lengths may be None; key_keep_mask int32 (B, S), nonzero = KEEP (as
// attn.sdpa; PyTorch's key_padding_mask is the opposite); dropout p on the weights with
// training and dropout_seed (each call draws its seed from a fresh generator seeded with
// dropout_seed: pass a new one per step). *_attention_init return the Xavier-initialised
// parameters as a dict of tensors (requires_grad set).
#include <string>

#include "attn/nn/attention_init.h"
#include "attn/ops/attention.h"
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

// The common options of every attention op; `rng` outlives the call it is used in.
template <class O>
void set_common(O& o, const std::optional<attn::Tensor>& key_padding_mask, float dropout, bool training,
                attn::Rng& rng) {
  o.key_padding_mask = attn::python::opt(key_padding_mask);
  o.dropout = dropout;
  o.training = training;
  o.rng = &rng;
}

py::dict params_dict(std::initializer_list<std::pair<const char*, attn::Tensor>> items) {
  py::dict d;
  for (const auto& [name, t] : items)
    if (t.defined()) d[name] = t;
  return d;
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
      .def("__iter__",
           [](const AttentionResult& r) { return py::iter(py::make_tuple(r.context, or_none(r.weights))); });

  py::enum_<LuongScore>(m, "LuongScore")
      .value("dot", LuongScore::dot)
      .value("general", LuongScore::general)
      .value("concat", LuongScore::concat);

  m.def("additive_project_keys", &attn::additive_project_keys, py::arg("keys"), py::arg("w_k"),
        "k̃ = K W_kᵀ: keys (B, S, E), w_k (A, E) -> (B, S, A)");
  m.def(
      "additive_attention",
      [](const Tensor& query, const Tensor& projected_keys, const Tensor& values, const Tensor& w_q, const Tensor& bias,
         const Tensor& v, const OT& lengths, bool normalize, const OT& g, float temperature, bool need_weights,
         const OT& key_padding_mask, float dropout, bool training, uint64_t dropout_seed) {
        Rng rng(dropout_seed);
        AdditiveOptions o;
        o.normalize = normalize;
        o.g = opt(g);
        o.temperature = temperature;
        o.need_weights = need_weights;
        set_common(o, key_padding_mask, dropout, training, rng);
        return additive_attention(query, projected_keys, values, w_q, bias, v, opt(lengths), o);
      },
      py::arg("query"), py::arg("projected_keys"), py::arg("values"), py::arg("w_q"), py::arg("bias"), py::arg("v"),
      py::arg("lengths") = py::none(), py::kw_only(), py::arg("normalize") = false, py::arg("g") = py::none(),
      py::arg("temperature") = 1.0f, py::arg("need_weights") = true, py::arg("key_keep_mask") = py::none(),
      py::arg("dropout") = 0.0f, py::arg("training") = true, py::arg("dropout_seed") = 0,
      "Bahdanau attention: e = vᵀ tanh(W_q q + k̃ + b) (v -> g v/‖v‖ when normalize)");
  m.def(
      "luong_attention",
      [](const Tensor& query, const Tensor& keys, const Tensor& values, const OT& lengths, const py::object& score,
         const OT& w, const OT& v, const OT& scale, float temperature, bool need_weights, const OT& key_padding_mask,
         float dropout, bool training, uint64_t dropout_seed) {
        Rng rng(dropout_seed);
        LuongOptions o;
        o.score = to_luong_score(score);
        o.w = opt(w);
        o.v = opt(v);
        o.scale = opt(scale);
        o.temperature = temperature;
        o.need_weights = need_weights;
        set_common(o, key_padding_mask, dropout, training, rng);
        return luong_attention(query, keys, values, opt(lengths), o);
      },
      py::arg("query"), py::arg("keys"), py::arg("values"), py::arg("lengths") = py::none(), py::kw_only(),
      py::arg("score") = "dot", py::arg("w") = py::none(), py::arg("v") = py::none(), py::arg("scale") = py::none(),
      py::arg("temperature") = 1.0f, py::arg("need_weights") = true, py::arg("key_keep_mask") = py::none(),
      py::arg("dropout") = 0.0f, py::arg("training") = true, py::arg("dropout_seed") = 0,
      "Luong attention; score 'dot' | 'general' (w (D, E)) | 'concat' (w (A, D+E), v (A))");
  m.def(
      "location_attention",
      [](const Tensor& query, const Tensor& values, const Tensor& w_a, const OT& b_a, const OT& lengths,
         float temperature, bool need_weights, const OT& key_padding_mask, float dropout, bool training,
         uint64_t dropout_seed) {
        Rng rng(dropout_seed);
        LocationOptions o;
        o.temperature = temperature;
        o.need_weights = need_weights;
        set_common(o, key_padding_mask, dropout, training, rng);
        return location_attention(query, values, w_a, opt(b_a), opt(lengths), o);
      },
      py::arg("query"), py::arg("values"), py::arg("w_a"), py::arg("b_a"), py::arg("lengths") = py::none(),
      py::kw_only(), py::arg("temperature") = 1.0f, py::arg("need_weights") = true,
      py::arg("key_keep_mask") = py::none(), py::arg("dropout") = 0.0f, py::arg("training") = true,
      py::arg("dropout_seed") = 0, "Luong location attention: a = softmax over the first S positions of (W_a q + b_a)");

  m.def("location_aware_features", &attn::location_aware_features, py::arg("prev_weights"), py::arg("filters"),
        "f = F * a_{t-1}: prev_weights (B, S), filters (K, r), r odd -> (B, S, K) (conv1d, padding r // 2)");
  m.def(
      "location_aware_attention",
      [](const Tensor& query, const Tensor& projected_keys, const Tensor& values, const Tensor& prev_weights,
         const Tensor& w_q, const Tensor& bias, const Tensor& v, const Tensor& filters, const Tensor& w_loc,
         const OT& lengths, float sharpening, bool smoothing, bool need_weights) {
        LocationAwareOptions o;
        o.sharpening = sharpening;
        o.smoothing = smoothing;
        o.need_weights = need_weights;
        return location_aware_attention(query, projected_keys, values, prev_weights, w_q, bias, v, filters, w_loc,
                                        opt(lengths), o);
      },
      py::arg("query"), py::arg("projected_keys"), py::arg("values"), py::arg("prev_weights"), py::arg("w_q"),
      py::arg("bias"), py::arg("v"), py::arg("filters"), py::arg("w_loc"), py::arg("lengths") = py::none(),
      py::kw_only(), py::arg("sharpening") = 1.0f, py::arg("smoothing") = false, py::arg("need_weights") = true,
      "Chorowski location-aware attention: e = vᵀ tanh(W_q q + k̃ + U (F * a_prev) + b), a = softmax(β e) "
      "(smoothing: σ(β e) normalised)");
  m.def(
      "additive_attention_init",
      [](int64_t D, int64_t E, int64_t A, uint64_t seed, bool normalize) {
        Rng rng(seed);
        const attn::nn::AdditiveParams p = attn::nn::additive_attention_init(D, E, A, rng, normalize);
        return params_dict({{"w_q", p.w_q}, {"w_k", p.w_k}, {"bias", p.bias}, {"v", p.v}, {"g", p.g}});
      },
      py::arg("D"), py::arg("E"), py::arg("A"), py::kw_only(), py::arg("seed") = 0, py::arg("normalize") = false,
      "Xavier-initialised Bahdanau parameters: dict w_q (A, D), w_k (A, E), bias (A) zeros, v (A) [, g]");
  m.def(
      "luong_attention_init",
      [](const py::object& score, int64_t D, int64_t E, int64_t A, uint64_t seed) {
        Rng rng(seed);
        const attn::nn::LuongParams p = attn::nn::luong_attention_init(to_luong_score(score), D, E, A, rng);
        return params_dict({{"w", p.w}, {"v", p.v}});
      },
      py::arg("score"), py::arg("D"), py::arg("E"), py::arg("A") = 0, py::kw_only(), py::arg("seed") = 0,
      "Xavier-initialised Luong parameters: dict (general: w (D, E); concat: w (A, D+E), v (A); dot: empty)");
  m.def(
      "location_attention_init",
      [](int64_t D, int64_t S_max, uint64_t seed) {
        Rng rng(seed);
        const attn::nn::LocationParams p = attn::nn::location_attention_init(D, S_max, rng);
        return params_dict({{"w_a", p.w_a}, {"b_a", p.b_a}});
      },
      py::arg("D"), py::arg("S_max"), py::kw_only(), py::arg("seed") = 0,
      "Xavier-initialised Luong location parameters: dict w_a (S_max, D), b_a (S_max) zeros");
}

}  // namespace

ATTN_PYTHON_REGISTER(register_attention);
