// attn.Model: a checkpoint that `attn train` (or attn.save) wrote, loaded with its model,
// vocabulary and tokenizer (python/attn/checkpoint.py wraps it as attn.load / attn.save).
// One class for the four formats; a method the format has no use for is a ValueError
// naming the format and the formats that have it.
//   attn-seq2seq      translate (token ids), attend, logits
//   attn-translation  translate (text), attend, logits
//   attn-classifier   classify, attend
//   attn-lm           generate
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/data/tasks.h"
#include "attn/decode/checkpoint_kind.h"
#include "attn/decode/classify.h"
#include "attn/decode/g2p.h"
#include "attn/decode/sample.h"
#include "attn/decode/translate.h"
#include "attn/io/checksum.h"
#include "attn/io/safetensors.h"
#include "attn/json.h"
#include "attn/models/transformer.h"
#include "attn/precision.h"
#include "attn/train/checkpoint.h"
#include "attn/train/seq2seq_trainer.h"
#include "nn_module.h"

namespace py = pybind11;

namespace {

using namespace attn;
using Kind = decode::CheckpointKind;

struct LoadedCheckpoint {
  std::string path, format;
  nlohmann::json metadata;
  std::unique_ptr<decode::LoadedSeq2Seq> seq2seq;
  std::unique_ptr<decode::LoadedTranslator> translator;
  std::unique_ptr<decode::LoadedClassifier> classifier;
  std::unique_ptr<decode::LoadedLm> lm;
  std::unique_ptr<decode::LoadedG2p> g2p;

  nn::Module& module() {
    if (seq2seq) return *seq2seq->model;
    if (translator) return translator->model->module();
    if (classifier) return classifier->model->module();
    if (g2p) return g2p->model->module();
    return *lm->model;
  }

  decode::CheckpointKind kind = decode::CheckpointKind::seq2seq;

  // ValueError unless this checkpoint is one of `kinds` (their formats " or "-joined).
  void require(const std::string& method, std::initializer_list<decode::CheckpointKind> kinds) const {
    std::string names;
    for (decode::CheckpointKind k : kinds) {
      if (kind == k) return;
      names += (names.empty() ? "" : " or ") + std::string(decode::format_name(k));
    }
    throw ValueError(method + ": '" + path + "' is an " + format + " checkpoint; " + method + " needs " + names);
  }
};

std::unique_ptr<LoadedCheckpoint> load_checkpoint_any(const std::string& path) {
  auto c = std::make_unique<LoadedCheckpoint>();
  c->path = path;
  const std::optional<decode::CheckpointKind> kind = decode::find_checkpoint_kind(path);
  if (!kind) {
    std::string known;
    for (decode::CheckpointKind k : decode::checkpoint_kinds())
      known += (known.empty() ? "" : ", ") + std::string(decode::format_name(k));
    throw IoError(path + ": not an attn checkpoint (format '" + train::checkpoint_format(path) + "'; expected " +
                  known + ")");
  }
  c->kind = *kind;
  c->format = decode::format_name(*kind);
  switch (*kind) {
    case decode::CheckpointKind::seq2seq:
      c->seq2seq = std::make_unique<decode::LoadedSeq2Seq>(decode::load_seq2seq(path));
      break;
    case decode::CheckpointKind::translation:
      c->translator = std::make_unique<decode::LoadedTranslator>(decode::load_translator(path));
      break;
    case decode::CheckpointKind::classifier:
      c->classifier = std::make_unique<decode::LoadedClassifier>(decode::load_classifier(path));
      break;
    case decode::CheckpointKind::lm:
      c->lm = std::make_unique<decode::LoadedLm>(decode::load_char_lm(path));
      break;
    case decode::CheckpointKind::g2p:
      c->g2p = std::make_unique<decode::LoadedG2p>(decode::load_g2p(path));
      break;
    case decode::CheckpointKind::asr:
      throw ValueError(path +
                       " is an ASR checkpoint: the Python module does not load those yet (attn eval scores them)");
  }
  io::SafetensorsFile file = io::load_safetensors(path);
  c->metadata = io::attn_metadata(file, path);
  return c;
}

// Token-id sources (content symbols 3..31) → one padded batch (B, S) and lengths (B).
std::pair<Tensor, Tensor> source_batch(const std::vector<std::vector<int32_t>>& sources) {
  if (sources.empty()) throw ValueError("translate: no sources given");
  for (size_t b = 0; b < sources.size(); ++b) {
    if (sources[b].empty()) throw ValueError("translate: source " + std::to_string(b) + " is empty");
    for (size_t s = 0; s < sources[b].size(); ++s)
      if (sources[b][s] < data::kFirstSymbol || sources[b][s] >= data::kVocabSize)
        throw ValueError("translate: token id " + std::to_string(sources[b][s]) + " at position " + std::to_string(s) +
                         " of source " + std::to_string(b) + " is not a content symbol (3..31)");
  }
  data::Batch b = data::make_batch(data::TaskKind::copy, sources);
  return {b.src, b.src_lengths};
}

int longest(const std::vector<std::vector<int32_t>>& sources) {
  size_t n = 0;
  for (const auto& s : sources) n = std::max(n, s.size());
  return static_cast<int>(n);
}

models::DecodeResult decode_seq2seq(LoadedCheckpoint& c, const std::vector<std::vector<int32_t>>& sources, int beam,
                                    float length_penalty, int max_len,
                                    models::BeamRules rules = models::BeamRules::attn) {
  if (beam < 1) throw ValueError("translate: beam must be >= 1, got " + std::to_string(beam));
  if (max_len < 0)
    throw ValueError("translate: max_len must be >= 0 (0: 2 x source + 10), got " + std::to_string(max_len));
  auto [src, lengths] = source_batch(sources);
  const int limit = max_len > 0 ? max_len : 2 * longest(sources) + 10;
  models::Seq2Seq& model = *c.seq2seq->model;
  model.eval();
  if (beam == 1) return model.greedy(src, lengths, limit);
  return model.beam(
      src, lengths,
      models::BeamOptions{.width = beam, .length_penalty = length_penalty, .max_len = limit, .rules = rules});
}

// The ids without the final EOS.
std::vector<int32_t> strip_eos(std::vector<int32_t> ids) {
  if (!ids.empty() && ids.back() == data::kEos) ids.pop_back();
  return ids;
}

// A translation checkpoint names its tokenizer by file name beside it: copy it there when
// missing; a different file of that name there is an IoError (nothing is overwritten).
void place_tokenizer(const LoadedCheckpoint& c, const std::string& path) {
  namespace fs = std::filesystem;
  const std::string& from = c.translator->info.tokenizer;
  const fs::path to = fs::path(path).parent_path() / fs::path(from).filename();
  if (!fs::exists(to)) {
    std::error_code error;
    if (!fs::copy_file(from, to, error))
      throw IoError(path + ": cannot copy its tokenizer " + from + " to " + to.string() + ": " + error.message());
  } else if (io::file_crc32_hex(to.string()) != io::file_crc32_hex(from)) {
    throw IoError(path + ": " + to.string() + " is another tokenizer than the checkpoint's " + from +
                  "; save into another directory");
  }
}

void save_loaded(LoadedCheckpoint& c, const std::string& path) {
  if (c.translator) place_tokenizer(c, path);
  train::save_run_checkpoint(path, c.module().named_parameters(), c.metadata);
}

// Teacher-forced logits (B, T, V) of an encoder-decoder checkpoint, as numpy (the RNN's
// time-major (T, B, V) transposed).
py::array teacher_forced_logits(LoadedCheckpoint& c, const Tensor& src, const Tensor& src_lengths,
                                const Tensor& tgt_in) {
  c.require("logits", {Kind::seq2seq, Kind::translation});
  if (tgt_in.dtype() != DType::i32 || tgt_in.shape().rank() != 2)
    throw ShapeError("logits: 'tgt_in' expected (B, T) int32, got " + tgt_in.shape().str() + " " +
                     dtype_name(tgt_in.dtype()));
  const int64_t B = tgt_in.dim(0), T = tgt_in.dim(1);
  Tensor tgt_lengths = Tensor::empty(Shape({B}), DType::i32);
  for (int64_t b = 0; b < B; ++b) tgt_lengths.i32()[b] = static_cast<int32_t>(T);
  const data::Batch batch{src, src_lengths, tgt_in, tgt_in, tgt_lengths};
  autodiff::NoGradGuard no_grad;
  c.module().eval();
  auto* transformer = dynamic_cast<models::TransformerSeq2Seq*>(&c.module());
  if (transformer) return attn::python::to_numpy(transformer->logits(batch));
  auto& rnn = dynamic_cast<models::Seq2Seq&>(c.module());
  py::array time_major = attn::python::to_numpy(rnn.logits(batch));  // (T, B, V)
  return py::module_::import("numpy").attr("ascontiguousarray")(time_major.attr("transpose")(1, 0, 2));
}

// precision= of the Model's methods: "fp32", "bf16" or "int8" for the call; None keeps the process's
// (attn.set_precision, fp32 unless set).
struct CallPrecision {
  std::optional<PrecisionScope> scope;
  explicit CallPrecision(const std::optional<std::string>& name) {
    if (name) scope.emplace(parse_precision(*name));
  }
};

py::object json_to_python(const nlohmann::json& j) {
  return py::module_::import("json").attr("loads")(attn::json_text(j));
}

void register_checkpoints(py::module_& m) {
  py::class_<LoadedCheckpoint>(m, "Model", "A loaded attn checkpoint: attn.load(path)")
      .def(py::init(&load_checkpoint_any), py::arg("path"))
      .def_readonly("path", &LoadedCheckpoint::path)
      .def_readonly("format", &LoadedCheckpoint::format,
                    "attn-seq2seq | attn-translation | attn-classifier | attn-lm | attn-g2p")
      .def_property_readonly(
          "metadata", [](const LoadedCheckpoint& c) { return json_to_python(c.metadata); },
          "The checkpoint's 'attn' metadata (configuration, vocabulary, progress) as a dict")
      .def_property_readonly(
          "module",
          [](const py::object& self) -> py::object {
            // reference_internal: the module keeps its attn.Model (which owns it) alive.
            auto& c = self.cast<LoadedCheckpoint&>();
            constexpr auto policy = py::return_value_policy::reference_internal;
            if (c.seq2seq) return py::cast(c.seq2seq->model.get(), policy, self);
            return py::cast(&c.module(), policy, self);
          },
          "The model as an attn.nn.Module (attn.models.Seq2Seq for attn-seq2seq)")
      .def(
          "state_dict", [](LoadedCheckpoint& c) { return attn::python::parameter_dict(c.module()); },
          "{name: Tensor}, the live parameters under PyTorch's names")
      .def("save", &save_loaded, py::arg("path"),
           "Writes the (possibly changed) parameters with the same metadata, atomically (a translation "
           "checkpoint's tokenizer is copied beside it when it is not there)")
      .def(
          "translate",
          [](LoadedCheckpoint& c, const py::object& input, int beam, float length_penalty, int max_len,
             const std::string& beam_rules, const std::optional<std::string>& precision) -> py::object {
            c.require("translate", {Kind::seq2seq, Kind::translation});
            const models::BeamRules rules = models::parse_beam_rules(beam_rules);
            const CallPrecision at(precision);
            if (c.translator) {
              const bool one = py::isinstance<py::str>(input);
              const auto lines =
                  one ? std::vector<std::string>{input.cast<std::string>()} : input.cast<std::vector<std::string>>();
              decode::TranslateOptions o{
                  .beam = beam, .length_penalty = length_penalty, .rules = rules, .max_len = max_len};
              py::list out;
              for (const auto& t : decode::translate(*c.translator, lines, o)) out.append(t.text);
              return one ? out[0] : py::object(out);
            }
            const bool one = py::isinstance<py::sequence>(input) && py::len(input) > 0 &&
                             py::isinstance<py::int_>(input.cast<py::sequence>()[0]);
            const auto sources = one ? std::vector<std::vector<int32_t>>{input.cast<std::vector<int32_t>>()}
                                     : input.cast<std::vector<std::vector<int32_t>>>();
            py::list out;
            for (auto& ids : decode_seq2seq(c, sources, beam, length_penalty, max_len, rules).tokens)
              out.append(py::cast(strip_eos(ids)));
            return one ? out[0] : py::object(out);
          },
          py::arg("input"), py::kw_only(), py::arg("beam") = 1, py::arg("length_penalty") = 1.0f,
          py::arg("max_len") = 0, py::arg("beam_rules") = "attn", py::arg("precision") = py::none(),
          "attn-translation: a sentence (or a list) -> its translation(s); attn-seq2seq: token ids 3..31 (or a list of "
          "them) -> the output ids without EOS. beam 1 = greedy; max_len 0 = 2 x source + 10; beam_rules 'attn' | "
          "'ctranslate2' (CTranslate2 4.8.5's beam search: len^alpha, stops once beam hypotheses ended); precision "
          "'fp32' | 'bf16' | 'int8' (None: attn.get_precision())")
      .def("logits", &teacher_forced_logits, py::arg("src"), py::arg("src_lengths"), py::arg("tgt_in"),
           "Teacher forcing (eval mode, not recorded): src (B, S), src_lengths (B), tgt_in (B, T) int32 "
           "-> logits (B, T, V) as numpy")
      .def(
          "attend",
          [](LoadedCheckpoint& c, const py::object& input) -> py::object {
            c.require("attend", {Kind::seq2seq, Kind::translation, Kind::classifier});
            py::dict out;
            if (c.seq2seq) {
              const auto source = input.cast<std::vector<int32_t>>();
              models::DecodeResult r = decode_seq2seq(c, {source}, 1, 1.0f, 0);
              out["output"] = py::cast(r.tokens[0]);
              out["weights"] = py::cast(r.attention.empty() ? std::vector<std::vector<float>>{} : r.attention[0]);
            } else if (c.translator) {
              decode::Translation t = decode::translate(*c.translator, {input.cast<std::string>()},
                                                        decode::TranslateOptions{.attention = true})[0];
              out["text"] = t.text;
              out["source"] = t.src_pieces;
              out["output"] = t.out_pieces;
              out["weights"] = t.weights;
            } else {
              decode::Classification r =
                  decode::classify_text(*c.classifier->model, c.classifier->vocab, input.cast<std::string>());
              out["tokens"] = r.tokens;
              out["weights"] = r.attention;
            }
            return out;
          },
          py::arg("input"),
          "The attention weights: seq2seq {output, weights (step x source)}; translation {text, source, output, "
          "weights}; "
          "classifier {tokens, weights (per token; empty when the model has none)}")
      .def(
          "classify",
          [](LoadedCheckpoint& c, const std::string& text, const std::optional<std::string>& precision) {
            c.require("classify", {Kind::classifier});
            const CallPrecision at(precision);
            decode::Classification r = decode::classify_text(*c.classifier->model, c.classifier->vocab, text);
            py::dict out;
            out["label"] = r.label;
            out["name"] = c.classifier->labels.at(static_cast<size_t>(r.label));
            out["probability"] = r.probability;
            out["probabilities"] = r.probabilities;
            return out;
          },
          py::arg("text"), py::kw_only(), py::arg("precision") = py::none(),
          "{label, name, probability, probabilities}; precision 'fp32' | 'bf16' | 'int8' (None: attn.get_precision())")
      .def(
          "generate",
          [](LoadedCheckpoint& c, const std::string& prompt, int max_chars, float temperature, int top_k,
             uint64_t seed) {
            c.require("generate", {Kind::lm});
            if (max_chars < 1) throw ValueError("generate: max_chars must be >= 1, got " + std::to_string(max_chars));
            if (!(temperature >= 0.0f)) throw ValueError("generate: temperature must be >= 0");
            if (top_k < 0) throw ValueError("generate: top_k must be >= 0, got " + std::to_string(top_k));
            models::SampleOptions o{.max_len = max_chars, .temperature = temperature, .top_k = top_k, .seed = seed};
            return decode::sample_text(*c.lm, prompt, o);
          },
          py::arg("prompt") = "", py::kw_only(), py::arg("max_chars") = 200, py::arg("temperature") = 1.0f,
          py::arg("top_k") = 0, py::arg("seed") = 1, "Continues prompt with up to max_chars characters")
      .def("__repr__",
           [](const LoadedCheckpoint& c) { return "attn.Model(format='" + c.format + "', path='" + c.path + "')"; });

  m.def(
      "_save_seq2seq",
      [](models::Seq2Seq& model, const std::string& path, const std::string& task, int min_len, int max_len,
         int64_t step) {
        data::parse_task(task);  // ValueError listing the tasks
        decode::Seq2SeqInfo info{
            .config = model.config(), .task = task, .min_len = min_len, .max_len = max_len, .step = step};
        train::save_checkpoint(path, model, info);
      },
      py::arg("model"), py::arg("path"), py::arg("task"), py::arg("min_len"), py::arg("max_len"), py::arg("step"));
}

}  // namespace

ATTN_PYTHON_REGISTER(register_checkpoints);
