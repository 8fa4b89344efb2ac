#include "attn/train/lm_trainer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>

#include "attn/autodiff/tape.h"
#include "attn/data/tasks.h"
#include "attn/data/tatoeba.h"
#include "attn/data/text.h"
#include "attn/error.h"
#include "attn/io/safetensors.h"
#include "attn/models/memory_estimate.h"
#include "attn/random.h"
#include "attn/train/checkpoint.h"

namespace attn::train {
using nlohmann::json;

void LmOptions::validate() const {
  if (data_dir.empty()) throw ValueError("a data directory (--data) is required for --task charlm");
  if (max_chars < 2 || max_chars > models::kMaxLength - 2)
    throw ValueError("--max-len must be in [2, " + std::to_string(models::kMaxLength - 2) + "], got " +
                     std::to_string(max_chars));
  if (train_limit < 0) throw ValueError("--train-limit must be >= 0");
  if (batch < 1) throw ValueError("--batch must be >= 1, got " + std::to_string(batch));
  if (eval_sentences < 0) throw ValueError("--eval-sentences must be >= 0");
  if (eval_every < 1) throw ValueError("--eval-every must be >= 1, got " + std::to_string(eval_every));
  RunOptions::validate();
}

namespace {

// The distinct English sentences of fra.txt.gz, in file order.
std::vector<std::string> english_sentences(const std::string& data_dir, int64_t limit) {
  const std::string path = data::require_tatoeba_file(data_dir);
  std::vector<std::string> sentences;
  std::unordered_set<std::string> seen;
  for (data::TatoebaPair& pair : data::read_tatoeba(path)) {
    if (!seen.insert(pair.english).second) continue;
    sentences.push_back(std::move(pair.english));
    if (limit > 0 && static_cast<int64_t>(sentences.size()) >= limit) break;
  }
  if (sentences.size() < 50) throw IoError(path + ": too few sentences (" + std::to_string(sentences.size()) + ")");
  return sentences;
}

std::vector<int32_t> sequence(const data::CharVocab& vocab, const std::string& text, int max_chars) {
  std::vector<int32_t> ids{data::kBos};
  std::vector<int32_t> chars = vocab.encode(text);
  if (static_cast<int>(chars.size()) > max_chars) chars.resize(static_cast<size_t>(max_chars));
  ids.insert(ids.end(), chars.begin(), chars.end());
  ids.push_back(data::kEos);
  return ids;
}

int64_t target_count(const Tensor& ids) {
  int64_t n = 0;
  const int64_t B = ids.dim(0), T = ids.dim(1);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 1; t < T; ++t) n += ids.i32()[b * T + t] != data::kPad;
  return n;
}

// Mean validation loss per predicted character (EOS included).
double validation_loss(models::TransformerLM& model, const std::vector<std::vector<int32_t>>& val) {
  autodiff::NoGradGuard no_grad;
  model.eval();
  double total = 0.0;
  int64_t count = 0;
  for (size_t start = 0; start < val.size(); start += 128) {
    models::IdRows rows;
    for (size_t i = start; i < std::min(val.size(), start + 128); ++i) rows.emplace_back(val[i]);
    const Tensor ids = models::pad_rows(rows);
    const int64_t n = target_count(ids);
    total += model.loss(ids).item() * static_cast<double>(n);
    count += n;
  }
  model.train();
  return count ? total / static_cast<double>(count) : 0.0;
}

}  // namespace

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
    vocab_ = data::CharVocab::build(train_text);
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
    models::IdRows rows;
    for (int b = 0; b < o_.batch; ++b) rows.emplace_back(train_[rng.below(train_.size())]);
    const Tensor ids = models::pad_rows(distributed::shard_of(rows, shard()));
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
    return decode::lm_metadata(model_->config(), vocab_, o_.max_chars, best ? s.best_step : s.step, s.best_score);
  }
  RunState restore(const io::SafetensorsFile& file, const std::string& path) override {
    const decode::LoadedLm loaded = decode::load_char_lm(file, path);
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
  data::CharVocab vocab_;
  std::unique_ptr<models::TransformerLM> model_;
  std::vector<std::vector<int32_t>> train_, val_;  // BOS chars EOS
  double last_loss_ = 0.0;
};

}  // namespace

LmResult train_char_lm(models::TransformerConfig config, const LmOptions& o) {
  o.validate();
  LmTask task(std::move(config), o);
  const RunResult r = run(task, o);
  LmResult result(r);
  result.best_val_loss = r.state.best_score;
  result.best_val_bits_per_char = r.state.best_score / std::log(2.0);
  return result;
}

}  // namespace attn::train
