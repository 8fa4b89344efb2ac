#include "attn/data/subword.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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

#include "attn/data/sentencepiece_check.h"
#include "attn/data/tasks.h"
#include "attn/error.h"
#include "attn/io/atomic_file.h"
#include "attn/io/input_file.h"
#include "attn/models/memory_estimate.h"
#include "attn/signals.h"

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

using SpmOptions = std::unordered_map<std::string, std::string>;

// SentencePiece's trainer runs in a child process: it checks no flag that could stop it, and
// a fatal check inside it ends the process it runs in. A signal to attn (held.pending()) kills
// the child, and InterruptedError is thrown for the caller to clean up; a failure comes back
// through a pipe as SentencePiece's message.
void train_in_child(const SpmOptions& kwargs, const std::vector<std::string>& lines, std::vector<size_t> order,
                    DeferredSignals& held, const std::string& model_prefix) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
    throw IoError(fmt::format("cannot start SentencePiece training for '{}': {}", model_prefix, std::strerror(errno)));
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) {
    const int error = errno;
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    throw IoError(fmt::format("cannot start SentencePiece training for '{}': {}", model_prefix, std::strerror(error)));
  }
  if (child == 0) {
    ::close(pipe_fds[0]);
    for (int signal : {SIGINT, SIGTERM, SIGHUP}) ::signal(signal, SIG_DFL);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // attn killed with -9: the training stops too
    if (::getppid() != parent) ::_exit(3);
    std::string reply;
    try {
      LinesIterator iterator(lines, std::move(order));
      const auto status = spm::SentencePieceTrainer::Train(kwargs, &iterator);
      if (!status.ok()) reply = (is_io_code(status.code()) ? "I" : "V") + spm_message(status, "");
    } catch (const std::exception& e) {
      reply = std::string("V") + e.what();
    }
    reply = reply.substr(0, 4096);  // less than a pipe holds: the parent reads once the child has ended
    size_t written = 0;
    while (written < reply.size()) {
      const ssize_t n = ::write(pipe_fds[1], reply.data() + written, reply.size() - written);
      if (n <= 0) break;
      written += static_cast<size_t>(n);
    }
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  struct ClosePipe {
    int fd;
    ~ClosePipe() { ::close(fd); }
  } reader{pipe_fds[0]};
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (done < 0 && errno != EINTR)
      throw IoError(fmt::format("SentencePiece training for '{}': {}", model_prefix, std::strerror(errno)));
    if (held.pending()) {
      ::kill(child, SIGKILL);
      while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
      }
      const int signal = held.take();
      throw InterruptedError(
          fmt::format("interrupted ({}) while training the SentencePiece model '{}': nothing written",
                      signal_name(signal), model_prefix),
          signal);
    }
    ::usleep(20 * 1000);  // a signal cuts the wait short
  }
  std::string reply;
  char buffer[4096];
  for (ssize_t n; (n = ::read(reader.fd, buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    reply.append(buffer, static_cast<size_t>(n));
  }
  const std::string failed = fmt::format("SentencePiece training for '{}' failed: ", model_prefix);
  if (WIFSIGNALED(status))
    throw IoError(failed + fmt::format("it was killed by signal {} (out of memory?)", WTERMSIG(status)));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw ValueError(failed + fmt::format("SentencePiece stopped with exit status {}", WEXITSTATUS(status)));
  if (reply.empty()) return;
  const std::string message = failed + (reply.size() > 1 ? reply.substr(1) : "no reason given");
  if (reply[0] == 'I') throw IoError(message);
  throw ValueError(message);
}

}  // namespace

void train_subword_model(const std::vector<std::string>& lines, const std::string& model_prefix,
                         const SubwordTrainOptions& options) {
  // At most attn's vocabulary bound (2^24): SentencePiece itself computes vocab_size x 1.1 in
  // 32 bits, which wraps from 1,952,257,862 and then trains for ever.
  if (options.vocab_size < 5 || options.vocab_size > models::kMaxVocab) {
    throw ValueError(
        fmt::format("train_subword_model: vocab_size must be in [5, {}] (4 special pieces + 1 at least), got {}",
                    models::kMaxVocab, options.vocab_size));
  }
  if (options.model_type != "unigram" && options.model_type != "bpe") {
    throw ValueError(
        fmt::format("train_subword_model: unknown model_type '{}' (valid: unigram, bpe)", options.model_type));
  }
  if (!(options.character_coverage > 0.0f && options.character_coverage <= 1.0f)) {
    throw ValueError(
        fmt::format("train_subword_model: character_coverage must be in (0, 1], got {}", options.character_coverage));
  }
  if (options.max_sentences < 0) {
    throw ValueError(
        fmt::format("train_subword_model: max_sentences must be >= 0 (0 = all), got {}", options.max_sentences));
  }
  if (model_prefix.empty()) throw ValueError("train_subword_model: empty model_prefix");
  if (std::filesystem::path(model_prefix).filename().empty())
    throw ValueError(
        fmt::format("'{}' names a directory: give a file prefix such as '{}spm' (writes spm.model and "
                    "spm.vocab)",
                    model_prefix, model_prefix));
  const std::filesystem::path parent = std::filesystem::path(model_prefix).parent_path();
  std::error_code error;
  if (!parent.empty() && !std::filesystem::is_directory(parent, error)) {
    throw IoError(fmt::format("train_subword_model: cannot write '{}.model': directory '{}' does not exist",
                              model_prefix, parent.string()));
  }

  // SentencePiece skips a line longer than its max_sentence_length without a word, and with
  // no line left fails with no message ("failed: no reason given" for one 2 MB line).
  constexpr size_t kMaxLineBytes = 4192;  // SentencePiece's default, passed on below
  std::vector<size_t> order;
  size_t too_long = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].size() > kMaxLineBytes)
      ++too_long;
    else if (!lines[i].empty())
      order.push_back(i);
  }
  if (order.empty() && too_long > 0)
    throw ValueError(
        fmt::format("train_subword_model: no training line to learn from: {} line{} longer than {} bytes "
                    "(SentencePiece's limit; split the text into sentences), the others empty",
                    too_long, too_long == 1 ? " is" : "s are", kMaxLineBytes));
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
  // A signal stops the training and is reported once the scratch folder is gone; while the
  // two files are put in place it waits, so that they are replaced together.
  DeferredSignals held;
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
  const SpmOptions kwargs = {
      {"model_prefix", tmp_prefix},
      {"vocab_size", std::to_string(options.vocab_size)},
      {"model_type", options.model_type},
      {"character_coverage", fmt::format("{}", options.character_coverage)},
      {"pad_id", std::to_string(kPad)},
      {"bos_id", std::to_string(kBos)},
      {"eos_id", std::to_string(kEos)},
      {"unk_id", std::to_string(kSubwordUnk)},
      {"input_sentence_size", "0"},  // the sample is chosen above
      {"max_sentence_length", std::to_string(kMaxLineBytes)},
      {"num_threads", std::to_string(threads)},
      // INFO (0) logs every EM step; ERROR (2) keeps stderr quiet, errors come back as a status.
      {"minloglevel", options.verbose ? "0" : "2"},
  };
  train_in_child(kwargs, lines, std::move(order), held, model_prefix);
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
    throw IoError(
        fmt::format("cannot load SentencePiece model '{}'{}: {}", name, from, spm_message(status, unparsable)));
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
  // The bytes are read here, so that the character maps are checked before SentencePiece sees
  // them; from a regular file only (a FIFO would block, /dev/zero never end).
  int fd = -1;
  try {
    fd = io::open_regular_file(path);
  } catch (const IoError& e) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 && errno == ENOENT)
      throw IoError(fmt::format("cannot load SentencePiece model '{}': no such file", path));
    throw IoError(
        fmt::format("cannot load SentencePiece model: {}", e.what()));  // "<path>: not a regular file (a FIFO)"
  }
  std::string bytes;
  char buffer[1 << 16];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      throw IoError(fmt::format("cannot load SentencePiece model '{}': {}", path, std::strerror(error)));
    }
    bytes.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
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

std::vector<std::string> SubwordModel::encode_surfaces(const std::string& text) const {
  std::vector<std::string> pieces;
  const auto status = processor().Encode(text, &pieces);
  if (!status.ok()) throw ValueError(fmt::format("SubwordModel::encode_surfaces ('{}'): {}", path_, status.message()));
  return pieces;
}

std::string SubwordModel::decode_pieces(const std::vector<std::string>& pieces) const {
  std::string text;
  const auto status = processor().Decode(pieces, &text);
  if (!status.ok()) throw ValueError(fmt::format("SubwordModel::decode_pieces ('{}'): {}", path_, status.message()));
  return text;
}

int32_t SubwordModel::vocab_size() const { return static_cast<int32_t>(processor().GetPieceSize()); }

std::string SubwordModel::serialized() const { return processor().serialized_model_proto(); }

}  // namespace attn::data
