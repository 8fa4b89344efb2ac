// Transformer blocks (include/attn/nn/transformer.h): attn._attn.nn.TransformerEncoderLayer,
// TransformerDecoderLayer, TransformerEncoder, TransformerDecoder, CausalTransformer,
// PositionalEncoding and the KvCache of incremental decoding. Lengths are int32 (B)
// tensors (keys s >= length are padding), not PyTorch's boolean key_padding_mask (attn.nn's
// Python TransformerEncoderLayer / DecoderLayer wrap the two layers with PyTorch's arguments and masks).
// forward(..., need_weights=True) returns (out, weights): one (self, cross or None) pair per
// layer. load_parameters({name: array}) copies a state_dict in (names and shapes checked).
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "attn/nn/transformer.h"
#include "bindings.h"
#include "nn_module.h"
#include "optional.h"

namespace py = pybind11;

namespace {

using namespace attn;
using namespace attn::nn;
using attn::python::opt;
using attn::python::or_none;

py::tuple weights_pair(const LayerAttention& w) {
  return py::make_tuple(or_none(w.self_weights), or_none(w.cross_weights));
}

py::object with_weights(const Tensor& out, const std::vector<LayerAttention>* w) {
  if (w == nullptr) return py::cast(out);
  py::list l;
  for (const LayerAttention& a : *w) l.append(weights_pair(a));
  return py::make_tuple(out, l);
}

TransformerLayerOptions layer_options(int64_t d_model, int64_t heads, int64_t ffn, float dropout, bool norm_first,
                                      const std::string& activation, float eps, uint64_t seed) {
  TransformerLayerOptions o;
  o.d_model = d_model;
  o.heads = heads;
  o.ffn = ffn;
  o.dropout = dropout;
  o.norm_first = norm_first;
  o.activation = nn::parse_ffn_activation(activation, "TransformerLayer");
  o.eps = eps;
  o.seed = seed;
  return o;
}

#define ATTN_LAYER_OPTION_ARGS                                                                                       \
  py::arg("d_model"), py::arg("heads"), py::kw_only(), py::arg("ffn") = 1024, py::arg("dropout") = 0.1f,             \
                                                       py::arg("norm_first") = true, py::arg("activation") = "relu", \
                                                       py::arg("eps") = 1e-5f, py::arg("seed") = 1

template <class M>
void def_load(py::class_<M, Module>& cls) {
  cls.def(
      "load_parameters", [](M& m, const py::dict& d) { python::load_parameters(m, d); }, py::arg("values"),
      "Copies {name: array or Tensor} into the parameters (names and shapes checked)");
}

void register_transformer(py::module_& m) {
  py::module_ n = python::nn_submodule(m);

  py::class_<LayerKvCache>(n, "LayerKvCache", "One decoder layer's keys/values: (B, H, t, Dh), (B, H, S, Dh)")
      .def_property_readonly("self_k", [](const LayerKvCache& c) { return or_none(c.self_k); })
      .def_property_readonly("self_v", [](const LayerKvCache& c) { return or_none(c.self_v); })
      .def_property_readonly("cross_k", [](const LayerKvCache& c) { return or_none(c.cross_k); })
      .def_property_readonly("cross_v", [](const LayerKvCache& c) { return or_none(c.cross_v); });
  py::class_<KvCache>(n, "KvCache", "Incremental decoding state (start() of a decoder)")
      .def_readonly("steps", &KvCache::steps)
      .def_property_readonly("layers", [](const KvCache& c) { return c.layers; })
      .def("select_rows", &KvCache::select_rows, py::arg("rows"), "Keeps batch rows `rows` (int32 (B')), in order");

  auto make_layer = [](auto* tag) {
    using L = std::remove_pointer_t<decltype(tag)>;
    return [](int64_t d_model, int64_t heads, int64_t ffn, float dropout, bool norm_first, const std::string& act,
              float eps,
              uint64_t seed) { return new L(layer_options(d_model, heads, ffn, dropout, norm_first, act, eps, seed)); };
  };

  {
    py::class_<TransformerEncoderLayer, Module> cls(n, "TransformerEncoderLayer",
                                                    "torch.nn.TransformerEncoderLayer(batch_first=True)");
    cls.def(py::init(make_layer(static_cast<TransformerEncoderLayer*>(nullptr))), ATTN_LAYER_OPTION_ARGS)
        .def(
            "forward",
            [](TransformerEncoderLayer& l, const Tensor& x, const std::optional<Tensor>& key_lengths, bool causal,
               bool need_weights) -> py::object {
              LayerAttention w;
              LayerAttention* wp = need_weights ? &w : nullptr;
              Tensor y = causal ? l.forward_causal(x, opt(key_lengths), wp) : l.forward(x, opt(key_lengths), wp);
              if (!need_weights) return py::cast(y);
              return py::make_tuple(y, weights_pair(w));
            },
            py::arg("x"), py::arg("key_lengths") = py::none(), py::kw_only(), py::arg("causal") = false,
            py::arg("need_weights") = false, "x (B, S, D), key_lengths int32 (B) -> (B, S, D)");
    def_load(cls);
  }
  {
    py::class_<TransformerDecoderLayer, Module> cls(n, "TransformerDecoderLayer",
                                                    "torch.nn.TransformerDecoderLayer(batch_first=True), causal");
    cls.def(py::init(make_layer(static_cast<TransformerDecoderLayer*>(nullptr))), ATTN_LAYER_OPTION_ARGS)
        .def(
            "forward",
            [](TransformerDecoderLayer& l, const Tensor& x, const Tensor& memory,
               const std::optional<Tensor>& memory_lengths, bool need_weights) -> py::object {
              LayerAttention w;
              Tensor y = l.forward(x, memory, opt(memory_lengths), need_weights ? &w : nullptr);
              if (!need_weights) return py::cast(y);
              return py::make_tuple(y, weights_pair(w));
            },
            py::arg("x"), py::arg("memory"), py::arg("memory_lengths") = py::none(), py::kw_only(),
            py::arg("need_weights") = false, "x (B, T, D), memory (B, S, D), memory_lengths int32 (B) -> (B, T, D)");
    def_load(cls);
  }
  {
    py::class_<TransformerEncoder, Module> cls(n, "TransformerEncoder", "N encoder layers (+ final norm if pre-LN)");
    cls.def(py::init([](int layers, int64_t d_model, int64_t heads, int64_t ffn, float dropout, bool norm_first,
                        const std::string& act, float eps, uint64_t seed) {
              return new TransformerEncoder(layer_options(d_model, heads, ffn, dropout, norm_first, act, eps, seed),
                                            layers);
            }),
            py::arg("layers"), ATTN_LAYER_OPTION_ARGS)
        .def(
            "forward",
            [](TransformerEncoder& e, const Tensor& x, const std::optional<Tensor>& key_lengths, bool need_weights) {
              std::vector<LayerAttention> w;
              Tensor y = e.forward(x, opt(key_lengths), need_weights ? &w : nullptr);
              return with_weights(y, need_weights ? &w : nullptr);
            },
            py::arg("x"), py::arg("key_lengths") = py::none(), py::kw_only(), py::arg("need_weights") = false);
    def_load(cls);
  }
  {
    py::class_<TransformerDecoder, Module> cls(n, "TransformerDecoder", "N decoder layers (+ final norm if pre-LN)");
    cls.def(py::init([](int layers, int64_t d_model, int64_t heads, int64_t ffn, float dropout, bool norm_first,
                        const std::string& act, float eps, uint64_t seed) {
              return new TransformerDecoder(layer_options(d_model, heads, ffn, dropout, norm_first, act, eps, seed),
                                            layers);
            }),
            py::arg("layers"), ATTN_LAYER_OPTION_ARGS)
        .def(
            "forward",
            [](TransformerDecoder& d, const Tensor& x, const Tensor& memory,
               const std::optional<Tensor>& memory_lengths, bool need_weights) {
              std::vector<LayerAttention> w;
              Tensor y = d.forward(x, memory, opt(memory_lengths), need_weights ? &w : nullptr);
              return with_weights(y, need_weights ? &w : nullptr);
            },
            py::arg("x"), py::arg("memory"), py::arg("memory_lengths") = py::none(), py::kw_only(),
            py::arg("need_weights") = false)
        .def(
            "start",
            [](const TransformerDecoder& d, const std::optional<Tensor>& memory_lengths) {
              return d.start(opt(memory_lengths));
            },
            py::arg("memory_lengths") = py::none())
        .def(
            "step",
            [](TransformerDecoder& d, const Tensor& x, const std::optional<Tensor>& memory, KvCache& cache) {
              return d.step(x, opt(memory), cache);
            },
            py::arg("x"), py::arg("memory"), py::arg("cache"), "x (B, 1, D) -> (B, 1, D); updates cache");
    def_load(cls);
  }
  {
    py::class_<CausalTransformer, Module> cls(n, "CausalTransformer", "Decoder-only causal stack with a KV cache");
    cls.def(py::init([](int layers, int64_t d_model, int64_t heads, int64_t ffn, float dropout, bool norm_first,
                        const std::string& act, float eps, uint64_t seed) {
              return new CausalTransformer(layer_options(d_model, heads, ffn, dropout, norm_first, act, eps, seed),
                                           layers);
            }),
            py::arg("layers"), ATTN_LAYER_OPTION_ARGS)
        .def(
            "forward",
            [](CausalTransformer& c, const Tensor& x, const std::optional<Tensor>& lengths, bool need_weights) {
              std::vector<LayerAttention> w;
              Tensor y = c.forward(x, opt(lengths), need_weights ? &w : nullptr);
              return with_weights(y, need_weights ? &w : nullptr);
            },
            py::arg("x"), py::arg("lengths") = py::none(), py::kw_only(), py::arg("need_weights") = false)
        .def("start", &CausalTransformer::start, py::arg("batch"))
        .def("step", &CausalTransformer::step, py::arg("x"), py::arg("cache"));
    def_load(cls);
  }
  {
    py::class_<PositionalEncoding, Module> cls(n, "PositionalEncoding", "sinusoidal or learned positions");
    cls.def(py::init([](const std::string& kind, int64_t max_len, int64_t d_model, uint64_t seed) {
              Rng rng(seed);
              return new PositionalEncoding(kind, max_len, d_model, rng);
            }),
            py::arg("kind"), py::arg("max_len"), py::arg("d_model"), py::kw_only(), py::arg("seed") = 0)
        .def("forward", &PositionalEncoding::forward, py::arg("x"), py::arg("offset") = 0,
             "x (B, T, D) -> x + PE[offset .. offset + T)")
        .def_readonly("weight", &PositionalEncoding::weight);
    def_load(cls);
  }
}

#undef ATTN_LAYER_OPTION_ARGS

}  // namespace

ATTN_PYTHON_REGISTER(register_transformer);
