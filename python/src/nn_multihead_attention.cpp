// attn.nn.MultiheadAttention and attn.nn.MultiheadGeneralAttention (include/attn/nn/
// multihead_attention.h). forward returns (out, weights or None). key_padding_mask is
// NONZERO = KEEP (PyTorch: True = ignore). named_parameters() here is a dict name → Tensor
// (live parameters); load_parameters({name: array}) copies values in, checking names/shapes.
//
// The base class attn.nn.Module is registered by nn.cpp, and the registrars run in static
// initialisation order, which is unspecified across files (and reshuffled by LTO). So these
// classes derive from attn.nn.Module when it is already registered, and otherwise stand
// alone; either way they define the Module methods (train, eval, zero_grad, parameters,
// state_dict, ...) themselves, so the Python API is the same.
#include <map>
#include <string>
#include <vector>

#include "attn/nn/multihead_attention.h"
#include "bindings.h"
#include "nn_module.h"
#include "optional.h"

namespace py = pybind11;

namespace {

using namespace attn;
using namespace attn::nn;

MhaCallOptions call_options(const std::optional<Tensor>& key_lengths, const std::optional<Tensor>& key_padding_mask,
                            bool causal, const std::optional<Tensor>& attn_bias, float temperature, bool need_weights,
                            std::vector<int> heads, bool average_weights) {
  MhaCallOptions o;
  o.key_lengths = python::opt(key_lengths);
  o.key_padding_mask = python::opt(key_padding_mask);
  o.causal = causal;
  o.attn_bias = python::opt(attn_bias);
  o.temperature = temperature;
  o.need_weights = need_weights;
  o.heads = std::move(heads);
  o.average_weights = average_weights;
  return o;
}

py::tuple result(const MhaResult& r) { return py::make_tuple(r.out, python::or_none(r.weights)); }

template <class M, class... Base>
void def_methods(py::class_<M, Base...>& cls) {
  auto fwd = [](M& m, const Tensor& query, const Tensor& key, const Tensor& value,
                const std::optional<Tensor>& key_lengths, const std::optional<Tensor>& key_padding_mask, bool causal,
                const std::optional<Tensor>& attn_bias, float temperature, bool need_weights, std::vector<int> heads,
                bool average_weights) {
    return result(m.forward(query, key, value,
                            call_options(key_lengths, key_padding_mask, causal, attn_bias, temperature, need_weights,
                                         std::move(heads), average_weights)));
  };
  for (const char* name : {"forward", "__call__"})
    cls.def(name, fwd, py::arg("query"), py::arg("key"), py::arg("value"), py::kw_only(),
            py::arg("key_lengths") = py::none(), py::arg("key_keep_mask") = py::none(), py::arg("causal") = false,
            py::arg("attn_bias") = py::none(), py::arg("temperature") = 1.0f, py::arg("need_weights") = false,
            py::arg("heads") = std::vector<int>{}, py::arg("average_weights") = false,
            "query (B, T, D), key (B, S, kdim), value (B, S, vdim) -> (out (B, T, D), weights or None). "
            "key_keep_mask: int32 (B, S), nonzero = KEEP (the opposite of PyTorch's key_padding_mask; "
            "attn.nn.MultiheadAttention takes that).");
  cls.def(
         "named_parameters", [](const M& m) { return python::parameter_dict(m); }, "{name: Tensor} (live parameters)")
      .def(
          "state_dict", [](const M& m) { return python::parameter_dict(m); }, "{name: Tensor} (live parameters)")
      .def(
          "load_parameters", [](M& m, const py::dict& d) { python::load_parameters(m, d); }, py::arg("values"),
          "Copies {name: array or Tensor} into the parameters (names and shapes checked)")
      .def("parameters", [](const M& m) { return m.parameters(); })
      .def("num_parameters", [](const M& m) { return m.num_parameters(); })
      .def(
          "zero_grad", [](M& m, bool set_to_none) { m.zero_grad(set_to_none); }, py::arg("set_to_none") = true)
      .def(
          "train", [](M& m, bool on) { m.train(on); }, py::arg("on") = true)
      .def("eval", [](M& m) { m.eval(); })
      .def_property_readonly("training", [](const M& m) { return m.is_training(); });
}

// py::class_<M, Module> when attn.nn.Module is registered, else py::class_<M>.
template <class M, class Fn>
void with_class(py::module_& n, const char* name, const char* doc, Fn&& define) {
  if (py::detail::get_type_info(typeid(Module)) != nullptr) {
    py::class_<M, Module> cls(n, name, doc);
    define(cls);
    def_methods(cls);
  } else {
    py::class_<M> cls(n, name, doc);
    define(cls);
    def_methods(cls);
  }
}

void register_mha(py::module_& m) {
  // def_submodule returns the existing attn._attn.nn when nn.cpp made it first.
  py::module_ n = m.def_submodule("nn", "Modules: a named tree of parameters, PyTorch's names and layouts");

  with_class<MultiheadAttention>(
      n, "MultiheadAttention", "torch.nn.MultiheadAttention(batch_first=True) with the same parameters", [](auto& cls) {
        cls.def(py::init([](int64_t embed_dim, int64_t num_heads, int64_t kdim, int64_t vdim, bool bias, float dropout,
                            uint64_t seed) {
                  return new MultiheadAttention({.embed_dim = embed_dim,
                                                 .num_heads = num_heads,
                                                 .kdim = kdim,
                                                 .vdim = vdim,
                                                 .bias = bias,
                                                 .dropout = dropout,
                                                 .seed = seed});
                }),
                py::arg("embed_dim"), py::arg("num_heads"), py::kw_only(), py::arg("kdim") = 0, py::arg("vdim") = 0,
                py::arg("bias") = true, py::arg("dropout") = 0.0f, py::arg("seed") = 0)
            .def_property_readonly("embed_dim", [](const MultiheadAttention& a) { return a.options().embed_dim; })
            .def_property_readonly("num_heads", [](const MultiheadAttention& a) { return a.options().num_heads; })
            .def_property_readonly("head_dim", &MultiheadAttention::head_dim);
      });

  with_class<MultiheadGeneralAttention>(
      n, "MultiheadGeneralAttention", "Luong 'general' score per head: q_h^T W_h k_h", [](auto& cls) {
        cls.def(py::init([](int64_t embed_dim, int64_t num_heads, int64_t kdim, int64_t vdim, bool in_proj,
                            bool out_proj, bool bias, float scale, float dropout, uint64_t seed) {
                  return new MultiheadGeneralAttention({.embed_dim = embed_dim,
                                                        .num_heads = num_heads,
                                                        .kdim = kdim,
                                                        .vdim = vdim,
                                                        .in_proj = in_proj,
                                                        .out_proj = out_proj,
                                                        .bias = bias,
                                                        .scale = scale,
                                                        .dropout = dropout,
                                                        .seed = seed});
                }),
                py::arg("embed_dim"), py::arg("num_heads"), py::kw_only(), py::arg("kdim") = 0, py::arg("vdim") = 0,
                py::arg("in_proj") = true, py::arg("out_proj") = true, py::arg("bias") = true, py::arg("scale") = 1.0f,
                py::arg("dropout") = 0.0f, py::arg("seed") = 0);
      });
}

}  // namespace

ATTN_PYTHON_REGISTER(register_mha);
