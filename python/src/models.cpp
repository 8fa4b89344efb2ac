// attn.models.Seq2Seq (include/attn/models/seq2seq.h), built from a JSON configuration
// string (Seq2SeqConfig::from_json_string: missing fields keep their defaults), and
// attn.data: Batch, make_batch, TaskGenerator (include/attn/data/tasks.h).
#include <string>
#include <vector>

#include "attn/data/tasks.h"
#include "attn/models/seq2seq.h"
#include "nn_module.h"

namespace py = pybind11;

namespace {

void register_models(py::module_& m) {
  using namespace attn;
  using namespace attn::models;
  py::module_ d = m.def_submodule("data", "Synthetic seq2seq tasks: copy, reverse, sort");
  d.attr("PAD") = data::kPad;
  d.attr("BOS") = data::kBos;
  d.attr("EOS") = data::kEos;
  d.attr("VOCAB_SIZE") = data::kVocabSize;

  py::class_<data::Batch>(d, "Batch")
      .def(py::init([](Tensor src, Tensor src_lengths, Tensor tgt_in, Tensor tgt_out, Tensor tgt_lengths) {
             return data::Batch{std::move(src), std::move(src_lengths), std::move(tgt_in), std::move(tgt_out),
                                std::move(tgt_lengths)};
           }),
           py::arg("src"), py::arg("src_lengths"), py::arg("tgt_in"), py::arg("tgt_out"), py::arg("tgt_lengths"))
      .def_readwrite("src", &data::Batch::src)
      .def_readwrite("src_lengths", &data::Batch::src_lengths)
      .def_readwrite("tgt_in", &data::Batch::tgt_in)
      .def_readwrite("tgt_out", &data::Batch::tgt_out)
      .def_readwrite("tgt_lengths", &data::Batch::tgt_lengths);

  d.def(
      "make_batch",
      [](const std::string& task, const std::vector<std::vector<int32_t>>& sources) {
        return data::make_batch(data::parse_task(task), sources);
      },
      py::arg("task"), py::arg("sources"));

  py::class_<data::TaskGenerator>(d, "TaskGenerator")
      .def(py::init([](const std::string& task, int min_len, int max_len, uint64_t seed) {
             return data::TaskGenerator(data::parse_task(task), min_len, max_len, seed);
           }),
           py::arg("task"), py::arg("min_len"), py::arg("max_len"), py::arg("seed"))
      .def("next", &data::TaskGenerator::next, py::arg("batch_size"))
      .def("fixed_length", &data::TaskGenerator::fixed_length, py::arg("batch_size"), py::arg("length"));

  attn::python::nn_submodule(m);  // the base class attn.nn.Module first
  py::module_ md = m.def_submodule("models", "Sequence models");
  py::class_<Seq2Seq, nn::Module>(md, "Seq2Seq")
      .def(py::init([](const std::string& config_json) {
             return new Seq2Seq(Seq2SeqConfig::from_json_string(config_json));
           }),
           py::arg("config_json") = "{}", "A Seq2Seq from a JSON configuration (a subset of Seq2SeqConfig's fields)")
      .def("config_json", [](const Seq2Seq& s) { return s.config().to_json_string(); })
      .def("logits", &Seq2Seq::logits, py::arg("batch"), "Teacher forcing: logits (T, B, V), time-major")
      .def("loss", &Seq2Seq::loss, py::arg("batch"), py::arg("label_smoothing") = 0.0f,
           "Mean cross-entropy over the non-PAD target tokens (+ hard attention's REINFORCE term in training)")
      .def(
          "loss",
          [](Seq2Seq& s, Tensor src, Tensor src_lengths, Tensor tgt_in, Tensor tgt_out, Tensor tgt_lengths) {
            return s.loss(data::Batch{src, src_lengths, tgt_in, tgt_out, tgt_lengths});
          },
          py::arg("src"), py::arg("src_lengths"), py::arg("tgt_in"), py::arg("tgt_out"), py::arg("tgt_lengths"))
      .def(
          "greedy",
          [](Seq2Seq& s, const Tensor& src, const Tensor& src_lengths, int max_len) {
            DecodeResult r = s.greedy(src, src_lengths, max_len);
            return py::make_tuple(r.tokens, r.attention);
          },
          py::arg("src"), py::arg("src_lengths"), py::arg("max_len"),
          "(tokens per row, attention weights per row per step)")
      .def(
          "beam",
          [](Seq2Seq& s, const Tensor& src, const Tensor& src_lengths, int width, float length_penalty, int max_len) {
            if (width < 1) throw ValueError("beam: width must be >= 1, got " + std::to_string(width));
            if (max_len < 1) throw ValueError("beam: max_len must be >= 1, got " + std::to_string(max_len));
            DecodeResult r = s.beam(src, src_lengths, BeamOptions{width, length_penalty, max_len});
            py::list hypotheses;
            for (const auto& row : r.hypotheses) {
              py::list h;
              for (const auto& hyp : row) h.append(py::make_tuple(hyp.tokens, hyp.score));
              hypotheses.append(h);
            }
            return py::make_tuple(r.tokens, r.attention, hypotheses);
          },
          py::arg("src"), py::arg("src_lengths"), py::kw_only(), py::arg("width") = 4, py::arg("length_penalty") = 1.0f,
          py::arg("max_len") = 100,
          "Beam search: (best tokens per row, their attention per step, per row [(tokens, score)] best first)");
}

}  // namespace

ATTN_PYTHON_REGISTER(register_models);
