#include "attn/data/subword.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "attn/data/sentencepiece_check.h"
#include "attn/data/tasks.h"
#include "attn/error.h"
#include "attn/io/atomic_file.h"

namespace attn::data {
namespace {

namespace spm = sentencepiece;

// Feeds the chosen lines to the trainer without a temporary file.
class LinesIterator : public spm::SentenceIterator {
 public:
  LinesIterator(const std::vector<std::string>& lines, std::vector<size_t> order)
      : lines_(lines), order_(std::move(order)) {}
  bool done() const override { return pos_ >= order_.size(); }
  void Next() override { ++pos_; }
  const std::string& value() const override { return lines_[order_[pos_]]; }
  spm::util::Status status() const override { return spm::util::Status(); }

 private:
  const std::vector<std::string>& lines_;
  std::vector<size_t> order_;
  size_t pos_ = 0;
};

// SentencePiece's message without the source location and check expression it starts with
// ("./src/x.cc(580) [expr] Vocabulary size is too small ..." → "Vocabulary size is too small ..."),
// its option names spelt as attn's, and `fallback` when nothing else is left.
std::string spm_message(const spm::util::Status& status, const std::string& fallback) {
  std::string m = status.message();
  const size_t at = m.find(") [");
  if (m.rfind("./src/", 0) == 0 && at != std::string::npos) {
    const size_t end = m.find("] ", at);
    m = end == std::string::npos ? "" : m.substr(end + 2);
  }
  while (!m.empty() && std::isspace(static_cast<unsigned char>(m.back()))) m.pop_back();
  for (size_t p; (p = m.find("--character_coverage option")) != std::string::npos;)
    m.replace(p, 27, "--character-coverage");
  return m.empty() ? fallback : m;
}

bool is_io_code(spm::util::StatusCode code) {
  return code == spm::util::StatusCode::kNotFound || code == spm::util::StatusCode::kPermissionDenied ||
         code == spm::util::StatusCode::kDataLoss;
}

void check_special_ids(const spm::SentencePieceProcessor& sp, const std::string& name) {
  if (sp.pad_id() != kPad || sp.bos_id() != kBos || sp.eos_id() != kEos || sp.unk_id() != kSubwordUnk) {
    throw ValueError(fmt::format(
        "SentencePiece model '{}' has special ids pad={} bos={} eos={} unk={}; attn needs pad=0 bos=1 eos=2 "
        "unk=3 (train it with 'attn tokenize train' or --pad_id=0 --bos_id=1 --eos_id=2 --unk_id=3)",
        name, sp.pad_id(), sp.bos_id(), sp.eos_id(), sp.unk_id()));
  }
}

}  // namespace

void train_subword_model(const std::vector<std::string>& lines, const std::string& model_prefix,
                         const SubwordTrainOptions& options) {
  if (options.vocab_size < 5) {
    throw ValueError(fmt::format("train_subword_model: vocab_size must be >= 5 (4 special pieces + 1), got {}",
                                 options.vocab_size));
  }
  if (options.model_type != "unigram" && options.model_type != "bpe") {
    throw ValueError(
        fmt::format("train_subword_model: unknown model_type '{}' (valid: unigram, bpe)", options.model_type));
  }
  if (!(options.character_coverage > 0.0f && options.character_coverage <= 1.0f)) {
    throw ValueError(fmt::format("train_subword_model: character_coverage must be in (0, 1], got {}",
                                 options.character_coverage));
  }
  if (options.max_sentences < 0) {
    throw ValueError(
        fmt::format("train_subword_model: max_sentences must be >= 0 (0 = all), got {}", options.max_sentences));
  }
  if (model_prefix.empty()) throw ValueError("train_subword_model: empty model_prefix");
  if (std::filesystem::path(model_prefix).filename().empty())
    throw ValueError(fmt::format("'{}' names a directory: give a file prefix such as '{}spm' (writes spm.model and "
                                 "spm.vocab)", model_prefix, model_prefix));
  const std::filesystem::path parent = std::filesystem::path(model_prefix).parent_path();
  std::error_code error;
  if (!parent.empty() && !std::filesystem::is_directory(parent, error)) {
    throw IoError(fmt::format("train_subword_model: cannot write '{}.model': directory '{}' does not exist",
                              model_prefix, parent.string()));
  }

  std::vector<size_t> order;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!lines[i].empty()) order.push_back(i);
  }
  if (order.empty()) throw ValueError("train_subword_model: no non-empty training line");
  if (options.max_sentences > 0 && static_cast<int64_t>(order.size()) > options.max_sentences) {
    // An evenly spaced sample: deterministic, and it covers the whole input (not just its head).
    const size_t n = order.size();
    const size_t m = static_cast<size_t>(options.max_sentences);
    std::vector<size_t> sample(m);
    for (size_t i = 0; i < m; ++i) sample[i] = order[i * n / m];
    order = std::move(sample);
  }

  const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
  // SentencePiece writes <prefix>.model and .vocab itself, and a full disk can leave them cut
  // short without an error: it writes into a fresh folder beside the target (mkdtemp, so no
  // file of the user's is touched), the model is loaded back, and only then are both files
  // written into place atomically. A failure leaves neither file.
  std::string scratch_pattern = (parent.empty() ? std::string(".") : parent.string()) + "/.attn-spm-XXXXXX";
  if (::mkdtemp(scratch_pattern.data()) == nullptr)
    throw IoError(fmt::format("train_subword_model: cannot write '{}.model': cannot create a temporary folder: {}",
                              model_prefix, std::strerror(errno)));
  struct RemoveScratch {
    std::string folder;
    ~RemoveScratch() {
      std::error_code ignored;
      std::filesystem::remove_all(folder, ignored);
    }
  } scratch{scratch_pattern};
  const std::string tmp_prefix = scratch.folder + "/spm";
  const std::unordered_map<std::string, std::string> kwargs = {
      {"model_prefix", tmp_prefix},
      {"vocab_size", std::to_string(options.vocab_size)},
      {"model_type", options.model_type},
      {"character_coverage", fmt::format("{}", options.character_coverage)},
      {"pad_id", std::to_string(kPad)},
      {"bos_id", std::to_string(kBos)},
      {"eos_id", std::to_string(kEos)},
      {"unk_id", std::to_string(kSubwordUnk)},
      {"input_sentence_size", "0"},  // the sample is chosen above
      {"num_threads", std::to_string(threads)},
      // INFO (0) logs every EM step; ERROR (2) keeps stderr quiet, errors come back as a status.
      {"minloglevel", options.verbose ? "0" : "2"},
  };
  LinesIterator iterator(lines, std::move(order));
  const auto status = spm::SentencePieceTrainer::Train(kwargs, &iterator);
  if (!status.ok()) {
    const std::string message =
        fmt::format("SentencePiece training for '{}' failed: {}", model_prefix, spm_message(status, "no reason given"));
    if (is_io_code(status.code())) throw IoError(message);
    throw ValueError(message);
  }
  for (const char* ext : {".model", ".vocab"}) {
    if (!std::filesystem::is_regular_file(tmp_prefix + ext, error)) {
      throw IoError(fmt::format("train_subword_model: SentencePiece did not write '{}{}'", model_prefix, ext));
    }
  }
  try {
    SubwordModel::load(tmp_prefix + ".model");
  } catch (const Error&) {
    throw IoError(fmt::format("train_subword_model: '{}.model' came out unreadable (is the disk full?)", model_prefix));
  }
  for (const char* ext : {".model", ".vocab"}) {
    try {
      io::copy_file_atomically(tmp_prefix + ext, model_prefix + ext);
    } catch (const IoError& e) {
      throw IoError(fmt::format("train_subword_model: {}", e.what()));
    }
  }
}

namespace {
// SentencePiece reports most damage through its status, but a model that parses with, say, an
// empty piece makes its trie builder (darts-clone) throw instead: found by fuzz/subword_fuzz.
// Such an exception becomes the same IoError naming the model, not a raw library message.
template <class Load>
auto guarded_load(const std::string& name, Load&& load) {
  try {
    return load();
  } catch (const std::exception& e) {
    throw IoError(fmt::format("cannot load SentencePiece model '{}': a damaged model ({})", name, e.what()));
  }
}

// A processor loaded by load(sp) and checked to use attn's special ids; IoError
// "cannot load SentencePiece model '<name>'<from>: <why>" when it does not load.
template <typename Load>
std::shared_ptr<spm::SentencePieceProcessor> load_processor(const std::string& name, const char* from,
                                                            const char* unparsable, Load&& load) {
  auto sp = std::make_shared<spm::SentencePieceProcessor>();
  const auto status = guarded_load(name, [&] { return load(*sp); });
  if (!status.ok())
    throw IoError(fmt::format("cannot load SentencePiece model '{}'{}: {}", name, from, spm_message(status, unparsable)));
  check_special_ids(*sp, name);
  return sp;
}

// The processor of a serialized model whose character maps were checked first (libsentencepiece
// trusts them: sentencepiece_check.h).
std::shared_ptr<spm::SentencePieceProcessor> checked_processor(const std::string& bytes, const std::string& name,
                                                               const char* from, const char* unparsable) {
  if (!check_sentencepiece_charsmaps(bytes, name))
    throw IoError(fmt::format("cannot load SentencePiece model '{}'{}: {}", name, from, unparsable));
  return load_processor(name, from, unparsable,
                        [&](spm::SentencePieceProcessor& sp) { return sp.LoadFromSerializedProto(bytes); });
}
}  // namespace

SubwordModel SubwordModel::load(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    throw IoError(fmt::format("cannot load SentencePiece model '{}': no such file", path));
  }
  // The bytes are read here, so that the character maps are checked before SentencePiece sees them.
  std::ifstream in(path, std::ios::binary);
  std::string bytes;
  if (in) bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (!in && !in.eof()) throw IoError(fmt::format("cannot load SentencePiece model '{}': {}", path, std::strerror(errno)));
  SubwordModel model;
  model.processor_ = checked_processor(bytes, path, "", "not a SentencePiece model file (it does not parse)");
  model.path_ = path;
  return model;
}

SubwordModel SubwordModel::from_serialized(const std::string& bytes, const std::string& name) {
  SubwordModel model;
  model.processor_ = checked_processor(bytes, name, " from its bytes", "not a SentencePiece model (it does not parse)");
  model.path_ = name;
  return model;
}

const spm::SentencePieceProcessor& SubwordModel::processor() const {
  if (!processor_) throw ValueError("SubwordModel: no model loaded (use SubwordModel::load or from_serialized)");
  return *processor_;
}

std::vector<int32_t> SubwordModel::encode(const std::string& text) const {
  std::vector<int> ids;
  const auto status = processor().Encode(text, &ids);
  if (!status.ok()) throw ValueError(fmt::format("SubwordModel::encode ('{}'): {}", path_, status.message()));
  return std::vector<int32_t>(ids.begin(), ids.end());
}

std::string SubwordModel::decode(const std::vector<int32_t>& ids) const {
  const int32_t V = vocab_size();
  std::vector<int> kept;
  kept.reserve(ids.size());
  for (const int32_t id : ids) {
    if (id < 0 || id >= V) {
      throw ValueError(fmt::format("SubwordModel::decode: id {} outside the vocabulary [0, {}) of '{}'", id, V, path_));
    }
    if (id == kEos) break;
    if (id == kPad || id == kBos) continue;
    kept.push_back(id);
  }
  std::string text;
  const auto status = processor().Decode(kept, &text);
  if (!status.ok()) throw ValueError(fmt::format("SubwordModel::decode ('{}'): {}", path_, status.message()));
  return text;
}

std::vector<std::string> SubwordModel::pieces(const std::vector<int32_t>& ids) const {
  const int32_t V = vocab_size();
  std::vector<std::string> out;
  out.reserve(ids.size());
  for (const int32_t id : ids) {
    if (id < 0 || id >= V) {
      throw ValueError(fmt::format("SubwordModel::pieces: id {} outside the vocabulary [0, {}) of '{}'", id, V, path_));
    }
    out.push_back(processor().IdToPiece(id));
  }
  return out;
}

std::vector<std::string> SubwordModel::encode_pieces(const std::string& text) const { return pieces(encode(text)); }

std::string SubwordModel::decode_pieces(const std::vector<std::string>& pieces) const {
  std::string text;
  const auto status = processor().Decode(pieces, &text);
  if (!status.ok()) throw ValueError(fmt::format("SubwordModel::decode_pieces ('{}'): {}", path_, status.message()));
  return text;
}

int32_t SubwordModel::vocab_size() const { return static_cast<int32_t>(processor().GetPieceSize()); }

std::string SubwordModel::serialized() const { return processor().serialized_model_proto(); }

}  // namespace attn::data
