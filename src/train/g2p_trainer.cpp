#include "attn/train/g2p_trainer.h"

#include <chrono>
#include <filesystem>
#include <optional>

#include "attn/data/cmudict.h"
#include "attn/data/parallel.h"
#include "attn/data/text.h"
#include "attn/decode/g2p.h"
#include "attn/error.h"
#include "attn/io/checkpoint_read.h"
#include "attn/models/memory_estimate.h"
#include "epoch_batches.h"
#include "translator_step.h"

namespace attn::train {
namespace fs = std::filesystem;
using nlohmann::json;

void G2pOptions::validate() const {
  if (data_dir.empty()) throw ValueError("a data directory (--data) is required for --task g2p");
  if (train_limit < 0) throw ValueError("--train-limit must be >= 0");
  if (eval_words < 0) throw ValueError("--eval-sentences must be >= 0");
  detail::check_batch_options(max_tokens, max_sentences, label_smoothing, eval_every);
  RunOptions::validate();
}

std::string cmudict_path(const std::string& data_dir) {
  std::string looked;
  for (const char* folder : {"", "cmudict"})
    for (const char* name : {"cmudict.dict.gz", "cmudict.dict"}) {
      const fs::path path = fs::path(data_dir) / folder / name;
      if (data::file_exists(path.string())) return path.string();
      looked += (looked.empty() ? "" : ", ") + path.string();
    }
  throw IoError("no CMUdict under " + data_dir + " (looked for " + looked + ")");
}

namespace {

// G2P for run(): token-budget batches walked epoch by epoch, dev PER (greedy) as the score.
class G2pTask final : public Task {
 public:
  G2pTask(models::TranslatorKind kind, json config, const G2pOptions& o) : o_(o) {
    const std::vector<data::CmudictEntry> all = data::read_cmudict(cmudict_path(o.data_dir));
    int64_t words = 0;
    for (const data::CmudictEntry& e : all) {
      if (data::cmudict_split(e.word) == data::CmudictSplit::dev) {
        if (o.eval_words == 0 || static_cast<int64_t>(dev_.size()) < o.eval_words) dev_.push_back(e);
        continue;
      }
      if (data::cmudict_split(e.word) != data::CmudictSplit::train) continue;
      if (o.train_limit > 0 && words == o.train_limit) continue;
      ++words;
      for (const auto& p : e.pronunciations)
        pairs_.push_back({data::g2p_encode_word(e.word), data::g2p_encode_phonemes(p)});
    }
    if (pairs_.empty() || dev_.empty())
      throw ValueError(o.data_dir + ": CMUdict gives no " + (pairs_.empty() ? "training" : "dev") +
                       " words (the split is by a hash of the word: docs/data.md)");
    const int64_t V = static_cast<int64_t>(data::g2p_symbols().size());
    models::set_translator_vocab(kind, config, V);
    loaded_.info = {kind, config, 0, 0.0, 0.0};
    loaded_.model = models::make_translator(kind, config);
    if (std::FILE* say = o.progress)
      std::fprintf(say, "CMUdict: %zu training pairs (%lld words), %zu dev words; %s model: %lld parameters\n",
                   pairs_.size(), static_cast<long long>(words), dev_.size(), models::to_string(kind),
                   static_cast<long long>(loaded_.model->module().num_parameters()));
    batches_.emplace(data::pair_lengths(pairs_), o.max_tokens, o.max_sentences, o.seed);
  }

  nn::Module& module() override { return loaded_.model->module(); }
  std::string label() const override { return std::string("train g2p ") + models::to_string(loaded_.info.kind); }
  int64_t train_pairs() const { return static_cast<int64_t>(pairs_.size()); }
  int64_t dev_words() const { return static_cast<int64_t>(dev_.size()); }
  double best_wer() const { return best_wer_; }

  StepLoss forward(int64_t step) override {
    const data::Batch batch =
        data::make_pair_batch(pairs_, distributed::shard_of(batches_->at(step), shard()));
    const StepLoss out = detail::translator_step(*loaded_.model, batch, o_.label_smoothing, &window_tokens_);
    last_loss_ = out.reported;
    return out;
  }
  std::vector<LogField> log_fields(double seconds) override {
    const double tokens_per_s = seconds > 0 ? window_tokens_ / seconds : 0.0;
    window_tokens_ = 0;
    return {{"epoch", static_cast<double>(batches_->epoch()), "epoch"}, {"loss", last_loss_, "loss"},
            {"tokens_per_s", tokens_per_s, "tok/s"}};
  }
  Validation validate(int64_t step) override {
    const decode::G2pEval e = decode::evaluate_g2p(loaded_, dev_, {.beam = 1});
    loaded_.model->module().train();
    const double per = e.score.per(), wer = e.score.wer();
    if (!has_best_ || per <= best_per_) {  // run() keeps this model (lower is better, ties: the later)
      has_best_ = true;
      best_per_ = per;
      best_wer_ = wer;
    }
    char message[256];
    std::snprintf(message, sizeof message, "step %lld: dev PER %.2f %%, WER %.2f %% (%lld words, greedy, %.0f s)",
                  static_cast<long long>(step), 100 * per, 100 * wer, static_cast<long long>(e.score.words), e.seconds);
    return {per, {{"val_per", per}, {"val_wer", wer}, {"eval_s", e.seconds}}, message};
  }
  bool higher_is_better() const override { return false; }
  json checkpoint_metadata(const RunState& s, bool best) const override {
    decode::G2pInfo info = loaded_.info;
    info.step = best ? s.best_step : s.step;
    info.best_val_per = s.best_score;
    info.best_val_wer = best_wer_;
    return decode::g2p_metadata(info);
  }
  RunState restore(const io::SafetensorsFile& file, const std::string& path) override {
    const decode::G2pInfo info = decode::load_g2p(file, path).info;
    if (info.kind != loaded_.info.kind || info.config != loaded_.info.config)
      throw ValueError("--resume: the options describe a different model than " + path + " (" + info.config.dump() + ")");
    io::load_model_parameters(file, module().named_parameters(), path);
    has_best_ = true;
    best_per_ = info.best_val_per;
    best_wer_ = info.best_val_wer;
    return {.step = info.step, .has_best = true, .best_score = info.best_val_per, .best_step = info.step};
  }
  json resume_checked_options() const override {
    json j = detail::batch_options_json(o_.max_tokens, o_.max_sentences, o_.label_smoothing);
    j["--train-limit"] = o_.train_limit;
    j["--eval-sentences"] = o_.eval_words;
    return j;
  }


 private:
  const G2pOptions& o_;
  decode::LoadedG2p loaded_;
  std::vector<data::EncodedPair> pairs_;
  std::vector<data::CmudictEntry> dev_;
  std::optional<detail::EpochBatches> batches_;  // once pairs_ is read
  double last_loss_ = 0.0;
  int64_t window_tokens_ = 0;
  bool has_best_ = false;
  double best_per_ = 0.0, best_wer_ = 0.0;
};

}  // namespace

G2pResult train_g2p(models::TranslatorKind kind, json config, const G2pOptions& o) {
  o.validate();
  G2pTask task(kind, std::move(config), o);
  G2pResult result(run(task, o));
  result.best_val_wer = task.best_wer();
  result.train_pairs = task.train_pairs();
  result.dev_words = task.dev_words();
  return result;
}

}  // namespace attn::train
