// attn.nn: the module tree (named_parameters, train/eval, zero_grad) and the basic layers
// of include/attn/nn/layers.h. Layers that draw initial weights take `seed` (the C++
// constructors take an Rng&; here a fresh Rng(seed) is used for the construction).
#include <utility>

#include "attn/nn/layers.h"
#include "attn/nn/module.h"
#include "attn/random.h"
#include "nn_module.h"

namespace py = pybind11;

namespace {

void register_nn(py::module_& m) {
  using namespace attn;
  using namespace attn::nn;
  py::module_ n = attn::python::nn_submodule(m);

  py::class_<Linear, Module>(n, "Linear")
      .def(py::init([](int64_t in_features, int64_t out_features, bool bias, uint64_t seed) {
             Rng rng(seed);
             return new Linear(in_features, out_features, rng, bias);
           }),
           py::arg("in_features"), py::arg("out_features"), py::kw_only(), py::arg("bias") = true, py::arg("seed") = 0)
      .def("forward", &Linear::forward, py::arg("x"))
      .def("__call__", &Linear::forward, py::arg("x"))
      .def_readonly("weight", &Linear::weight)
      .def_property_readonly(
          "bias", [](const Linear& l) -> py::object { return l.bias.defined() ? py::cast(l.bias) : py::none(); });

  py::class_<Embedding, Module>(n, "Embedding")
      .def(py::init([](int64_t vocab, int64_t dim, int32_t padding_idx, uint64_t seed) {
             Rng rng(seed);
             return new Embedding(vocab, dim, rng, padding_idx);
           }),
           py::arg("vocab"), py::arg("dim"), py::kw_only(), py::arg("padding_idx") = -1, py::arg("seed") = 0)
      .def("forward", &Embedding::forward, py::arg("ids"))
      .def("__call__", &Embedding::forward, py::arg("ids"))
      .def_readonly("weight", &Embedding::weight)
      .def_readonly("padding_idx", &Embedding::padding_idx);

  py::class_<LayerNorm, Module>(n, "LayerNorm")
      .def(py::init<int64_t, float>(), py::arg("dim"), py::kw_only(), py::arg("eps") = 1e-5f)
      .def("forward", &LayerNorm::forward, py::arg("x"))
      .def("__call__", &LayerNorm::forward, py::arg("x"))
      .def_readonly("weight", &LayerNorm::weight)
      .def_readonly("bias", &LayerNorm::bias)
      .def_readonly("eps", &LayerNorm::eps);

  py::class_<Dropout, Module>(n, "Dropout")
      .def(py::init<float, uint64_t>(), py::arg("p"), py::arg("seed"))
      .def("forward", &Dropout::forward, py::arg("x"))
      .def("__call__", &Dropout::forward, py::arg("x"))
      .def_readonly("p", &Dropout::p);

  py::class_<GRUCell, Module>(n, "GRUCell")
      .def(py::init([](int64_t input_size, int64_t hidden_size, uint64_t seed) {
             Rng rng(seed);
             return new GRUCell(input_size, hidden_size, rng);
           }),
           py::arg("input_size"), py::arg("hidden_size"), py::kw_only(), py::arg("seed") = 0)
      .def("forward", &GRUCell::forward, py::arg("x"), py::arg("h"))
      .def("__call__", &GRUCell::forward, py::arg("x"), py::arg("h"))
      .def_readonly("weight_ih", &GRUCell::weight_ih)
      .def_readonly("weight_hh", &GRUCell::weight_hh)
      .def_readonly("bias_ih", &GRUCell::bias_ih)
      .def_readonly("bias_hh", &GRUCell::bias_hh)
      .def_readonly("hidden_size", &GRUCell::hidden_size);

  py::class_<LSTMCell, Module>(n, "LSTMCell")
      .def(py::init([](int64_t input_size, int64_t hidden_size, uint64_t seed) {
             Rng rng(seed);
             return new LSTMCell(input_size, hidden_size, rng);
           }),
           py::arg("input_size"), py::arg("hidden_size"), py::kw_only(), py::arg("seed") = 0)
      .def("forward", &LSTMCell::forward, py::arg("x"), py::arg("h"), py::arg("c"))
      .def("__call__", &LSTMCell::forward, py::arg("x"), py::arg("h"), py::arg("c"))
      .def_readonly("weight_ih", &LSTMCell::weight_ih)
      .def_readonly("weight_hh", &LSTMCell::weight_hh)
      .def_readonly("bias_ih", &LSTMCell::bias_ih)
      .def_readonly("bias_hh", &LSTMCell::bias_hh)
      .def_readonly("hidden_size", &LSTMCell::hidden_size);
}

}  // namespace

ATTN_PYTHON_REGISTER(register_nn);
