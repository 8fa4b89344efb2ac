// attn.models.TransformerSeq2Seq (include/attn/models/transformer.h), built from a JSON
// configuration string (TransformerConfig::from_json: missing fields keep their defaults), for
// parity tests of the whole encoder-decoder, the pointer-generator's mixture included.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "attn/models/transformer.h"
#include "nn_module.h"

namespace py = pybind11;

namespace {

void register_transformer_seq2seq(py::module_& m) {
  using namespace attn;
  using namespace attn::models;
  attn::python::nn_submodule(m);  // the base class attn.nn.Module first
  py::module_ md = m.def_submodule("models", "Sequence models");
  py::class_<TransformerSeq2Seq, nn::Module>(md, "TransformerSeq2Seq")
      .def(py::init([](const std::string& config_json) {
             return new TransformerSeq2Seq(TransformerConfig::from_json(nlohmann::json::parse(config_json)));
           }),
           py::arg("config_json"), "A Transformer encoder-decoder from a JSON configuration (TransformerConfig)")
      .def("config_json", [](const TransformerSeq2Seq& t) { return t.config().to_json().dump(); })
      .def("load_parameters", &attn::python::load_parameters, py::arg("values"),
           "Copies {name: numpy array or Tensor} into the parameters (names as state_dict())")
      .def(
          "logits",
          [](TransformerSeq2Seq& t, const Tensor& src, const Tensor& src_lengths, const Tensor& tgt_in,
             const std::optional<Tensor>& src_ext, int64_t extended_vocab) {
            Batch batch;
            batch.src = src;
            batch.src_lengths = src_lengths;
            batch.tgt_in = tgt_in;
            if (src_ext) batch.src_ext = *src_ext;
            batch.extended_vocab = extended_vocab;
            return t.logits(batch);
          },
          py::arg("src"), py::arg("src_lengths"), py::arg("tgt_in"), py::kw_only(), py::arg("src_ext") = py::none(),
          py::arg("extended_vocab") = 0,
          "Teacher forcing: logits (B, T, V); with the pointer log P (B, T, Vx) over src_ext's extended ids");
}

}  // namespace

ATTN_PYTHON_REGISTER(register_transformer_seq2seq);
