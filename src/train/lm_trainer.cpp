#include "attn/train/lm_trainer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <unordered_map>
#include <map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "attn/autodiff/tape.h"
#include "attn/data/tasks.h"
#include "attn/data/text.h"
#include "attn/error.h"
#include "attn/io/safetensors.h"
#include "attn/random.h"
#include "attn/train/checkpoint.h"

namespace attn::train {
namespace fs = std::filesystem;
using nlohmann::json;

std::vector<std::string> utf8_characters(const std::string& text) {
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size();) {
    const size_t len = data::utf8_length_at(text, i);
    out.emplace_back(len ? text.substr(i, len) : std::string("\xEF\xBF\xBD"));  // U+FFFD for a bad byte
    i += len ? len : 1;
  }
  return out;
}

CharVocab::CharVocab(std::vector<std::string> characters) : characters_(std::move(characters)) {
  for (size_t i = 0; i < characters_.size(); ++i) index_.emplace(characters_[i], static_cast<int32_t>(i) + 4);
}

CharVocab CharVocab::build(const std::vector<std::string>& lines) {
  std::map<std::string, int64_t> counts;
  for (const auto& line : lines)
    for (auto& c : utf8_characters(line)) ++counts[c];
  std::vector<std::pair<std::string, int64_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> characters;
  for (auto& [c, n] : sorted) characters.push_back(c);
  return CharVocab(std::move(characters));
}

std::vector<int32_t> CharVocab::encode(const std::string& text) const {
  std::vector<int32_t> ids;
  for (const auto& c : utf8_characters(text)) {
    auto it = index_.find(c);
    ids.push_back(it == index_.end() ? kUnk : it->second);
  }
  return ids;
}

std::string CharVocab::decode(const std::vector<int32_t>& ids) const {
  std::string text;
  for (int32_t id : ids) {
    if (id == data::kEos) break;
    if (id < 4 || id >= size()) continue;
    text += characters_[static_cast<size_t>(id - 4)];
  }
  return text;
}

void LmOptions::validate() const {
  if (data_dir.empty()) throw ValueError("a data directory (--data) is required for --task charlm");
  if (max_chars < 2) throw ValueError("--max-len must be >= 2, got " + std::to_string(max_chars));
  if (train_limit < 0) throw ValueError("--train-limit must be >= 0");
  if (batch < 1) throw ValueError("--batch must be >= 1, got " + std::to_string(batch));
  if (eval_sentences < 0) throw ValueError("--eval-sentences must be >= 0");
  if (eval_every < 1) throw ValueError("--eval-every must be >= 1, got " + std::to_string(eval_every));
  RunOptions::validate();
}

namespace {

constexpr const char* kFormat = "attn-lm";

// The distinct English sentences of fra.txt.gz, in file order.
std::vector<std::string> english_sentences(const std::string& data_dir, int64_t limit) {
  const std::string path = (fs::path(data_dir) / "fra.txt.gz").string();
  if (!data::file_exists(path))
    throw IoError(path + ": no such file (--data must be the tatoeba-fra-eng directory holding fra.txt.gz)");
  std::vector<std::string> sentences;
  std::unordered_set<std::string> seen;
  for (auto& line : data::read_lines(path)) {
    const size_t tab = line.find('\t');
    std::string english = tab == std::string::npos ? line : line.substr(0, tab);
    if (english.empty() || !seen.insert(english).second) continue;
    sentences.push_back(std::move(english));
    if (limit > 0 && static_cast<int64_t>(sentences.size()) >= limit) break;
  }
  if (sentences.size() < 50) throw IoError(path + ": too few sentences (" + std::to_string(sentences.size()) + ")");
  return sentences;
}

std::vector<int32_t> sequence(const CharVocab& vocab, const std::string& text, int max_chars) {
  std::vector<int32_t> ids{data::kBos};
  std::vector<int32_t> chars = vocab.encode(text);
  if (static_cast<int>(chars.size()) > max_chars) chars.resize(static_cast<size_t>(max_chars));
  ids.insert(ids.end(), chars.begin(), chars.end());
  ids.push_back(data::kEos);
  return ids;
}

// (B, T) int32, PAD after each sequence.
Tensor pad_batch(const std::vector<const std::vector<int32_t>*>& rows) {
  size_t longest = 0;
  for (auto* r : rows) longest = std::max(longest, r->size());
  Tensor ids = Tensor::zeros({static_cast<int64_t>(rows.size()), static_cast<int64_t>(longest)}, DType::i32);
  for (size_t b = 0; b < rows.size(); ++b) std::copy(rows[b]->begin(), rows[b]->end(), ids.i32() + b * longest);
  return ids;
}

int64_t target_count(const Tensor& ids) {
  int64_t n = 0;
  const int64_t B = ids.dim(0), T = ids.dim(1);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 1; t < T; ++t) n += ids.i32()[b * T + t] != data::kPad;
  return n;
}

json info_json(const models::TransformerConfig& config, const CharVocab& vocab, int max_chars, int64_t step,
               double best) {
  return {{"format", kFormat},       {"version", kCheckpointVersion},   {"config", config.to_json()}, {"characters", vocab.characters()},
          {"max_chars", max_chars},  {"step", step},   {"best_val_loss", best}};
}

LoadedLm load_from(const io::SafetensorsFile& file, const std::string& path) {
  const json j = read_run_metadata(file, path, kFormat, "a language model checkpoint");
  LoadedLm loaded;
  try {
    loaded.vocab = CharVocab(j.at("characters").get<std::vector<std::string>>());
    loaded.model = std::make_unique<models::TransformerLM>(models::TransformerConfig::from_json(j.at("config")));
    loaded.step = j.at("step").get<int64_t>();
    loaded.best_val_loss = j.at("best_val_loss").get<double>();
  } catch (const json::exception& e) {
    throw IoError(path + ": bad 'attn' metadata: " + e.what());
  } catch (const ValueError& e) {
    throw IoError(path + ": bad model configuration: " + e.what());
  }
  if (loaded.model->config().tgt_vocab != loaded.vocab.size())
    throw IoError(path + ": the model's vocabulary (" + std::to_string(loaded.model->config().tgt_vocab) +
                  ") differs from its character list (" + std::to_string(loaded.vocab.size()) + ")");
  load_model_parameters(file, loaded.model->named_parameters(), path);
  return loaded;
}

// Mean validation loss per predicted character (EOS included).
double validation_loss(models::TransformerLM& model, const std::vector<std::vector<int32_t>>& val) {
  autodiff::NoGradGuard no_grad;
  model.eval();
  double total = 0.0;
  int64_t count = 0;
  for (size_t start = 0; start < val.size(); start += 128) {
    std::vector<const std::vector<int32_t>*> rows;
    for (size_t i = start; i < std::min(val.size(), start + 128); ++i) rows.push_back(&val[i]);
    const Tensor ids = pad_batch(rows);
    const int64_t n = target_count(ids);
    total += model.loss(ids).item() * static_cast<double>(n);
    count += n;
  }
  model.train();
  return count ? total / static_cast<double>(count) : 0.0;
}

}  // namespace

LoadedLm load_char_lm(const std::string& path) { return load_from(io::load_safetensors(path), path); }

std::string sample_text(LoadedLm& lm, const std::string& prompt, const models::SampleOptions& options) {
  lm.model->eval();
  std::vector<int32_t> prefix{data::kBos};
  for (int32_t id : lm.vocab.encode(prompt)) prefix.push_back(id);
  const int64_t room = lm.model->config().max_len - static_cast<int64_t>(prefix.size());
  if (room < 1)
    throw ValueError("the prompt has " + std::to_string(prefix.size() - 1) + " characters; the model's positions end at " +
                     std::to_string(lm.model->config().max_len - 1));
  models::SampleOptions o = options;
  o.max_len = static_cast<int>(std::min<int64_t>(o.max_len, room));
  o.stop_id = data::kEos;
  return prompt + lm.vocab.decode(lm.model->sample(prefix, o));
}

namespace {

// The character LM for run(): batches of sentences drawn from (seed, step), validation
// loss per character as the score (lower is better).
class LmTask final : public Task {
 public:
  LmTask(models::TransformerConfig config, const LmOptions& o) : o_(o) {
    const std::vector<std::string> sentences = english_sentences(o.data_dir, o.train_limit);
    std::vector<std::string> train_text;
    for (size_t i = 0; i < sentences.size(); ++i)
      if (i % 50 != 49) train_text.push_back(sentences[i]);
    vocab_ = CharVocab::build(train_text);
    config.tgt_vocab = vocab_.size();
    config.src_vocab = 0;
    if (config.max_len < o.max_chars + 2) config.max_len = o.max_chars + 2;
    model_ = std::make_unique<models::TransformerLM>(config);
    for (size_t i = 0; i < sentences.size(); ++i) {
      if (i % 50 == 49) {
        if (o.eval_sentences == 0 || static_cast<int64_t>(val_.size()) < o.eval_sentences)
          val_.push_back(sequence(vocab_, sentences[i], o.max_chars));
      } else {
        train_.push_back(sequence(vocab_, sentences[i], o.max_chars));
      }
    }
    if (o.progress)
      std::fprintf(o.progress, "%zu training sentences, %zu validation sentences, %d characters, %lld parameters\n",
                   train_.size(), val_.size(), vocab_.size() - 4, static_cast<long long>(model_->num_parameters()));
  }
  nn::Module& module() override { return *model_; }
  std::string label() const override { return "train charlm"; }

  StepLoss forward(int64_t step) override {
    // The batch depends only on (seed, step): a resumed run sees the same data.
    Rng rng(splitmix64(o_.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(step)));
    std::vector<const std::vector<int32_t>*> rows;
    for (int b = 0; b < o_.batch; ++b) rows.push_back(&train_[rng.below(train_.size())]);
    const Tensor ids = pad_batch(distributed::shard_of(rows, shard()));
    const Tensor loss = model_->loss(ids);
    last_loss_ = loss.item();
    return {loss, last_loss_, static_cast<double>(target_count(ids))};  // the mean over the non-PAD targets
  }
  std::vector<LogField> log_fields(double) override { return {{"loss", last_loss_, "loss"}}; }
  Validation validate(int64_t step) override {
    const double loss = validation_loss(*model_, val_);
    char message[160];
    std::snprintf(message, sizeof message, "step %lld: validation %.4f nats/char (%.3f bits/char)",
                  static_cast<long long>(step), loss, loss / std::log(2.0));
    return {loss, {{"val_loss", loss}, {"val_bits_per_char", loss / std::log(2.0)}}, message};
  }
  bool higher_is_better() const override { return false; }
  json checkpoint_metadata(const RunState& s, bool best) const override {
    return info_json(model_->config(), vocab_, o_.max_chars, best ? s.best_step : s.step, s.best_score);
  }
  RunState restore(const io::SafetensorsFile& file, const std::string& path) override {
    const LoadedLm loaded = load_from(file, path);
    if (loaded.vocab.characters() != vocab_.characters())
      throw ValueError("--resume: the training text's characters differ from those of " + path +
                       " (other --data or --train-limit?)");
    if (loaded.model->config().to_json() != model_->config().to_json())
      throw ValueError("--resume: the options describe a different model than " + path);
    load_model_parameters(file, model_->named_parameters(), path);
    return {.step = loaded.step, .has_best = true, .best_score = loaded.best_val_loss, .best_step = loaded.step};
  }
  json resume_checked_options() const override {
    return {{"--batch", o_.batch}, {"--max-len", o_.max_chars}, {"--train-limit", o_.train_limit}};
  }

 private:
  const LmOptions& o_;
  CharVocab vocab_;
  std::unique_ptr<models::TransformerLM> model_;
  std::vector<std::vector<int32_t>> train_, val_;  // BOS chars EOS
  double last_loss_ = 0.0;
};

}  // namespace

LmResult train_char_lm(models::TransformerConfig config, const LmOptions& o) {
  o.validate();
  LmTask task(std::move(config), o);
  const RunResult r = run(task, o);
  LmResult result;
  result.steps_done = r.state.step;
  result.interrupted = r.interrupted;
  result.best_val_loss = r.state.best_score;
  result.best_val_bits_per_char = r.state.best_score / std::log(2.0);
  result.final_loss = r.final_loss;
  result.train_seconds = r.train_seconds;
  result.model_path = r.model_path;
  return result;
}

}  // namespace attn::train
