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
#include "error_rate_task.h"
#include "translator_step.h"

namespace attn::train {
namespace fs = std::filesystem;
using nlohmann::json;

void G2pOptions::validate() const {
  detail::check_error_rate_task_options("g2p", data_dir, detail::limits_of(*this, eval_words), eval_every);
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
class G2pTask final : public detail::ErrorRateTask {
 public:
  G2pTask(models::TranslatorKind kind, json config, const G2pOptions& o)
      : ErrorRateTask(detail::limits_of(o, o.eval_words), {"per", "PER", "words", "tokens_per_s", "tok/s"}) {
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

  StepLoss forward(int64_t step) override {
    const data::Batch batch = data::make_pair_batch(pairs_, distributed::shard_of(batches_->at(step), shard()));
    const StepLoss out = detail::translator_step(*loaded_.model, batch, limits_.label_smoothing, &window_items_);
    last_loss_ = out.reported;
    return out;
  }
  Validation validate(int64_t step) override {
    const decode::G2pEval e = decode::evaluate_g2p(loaded_, dev_, {.beam = 1});
    loaded_.model->module().train();
    return scored(step, e.score.per(), e.score.wer(), e.score.words, e.seconds);
  }
  json checkpoint_metadata(const RunState& s, bool best) const override {
    return decode::g2p_metadata(info_at(loaded_.info, s, best, &decode::G2pInfo::best_val_per));
  }
  RunState restore(const io::SafetensorsFile& file, const std::string& path) override {
    const decode::G2pInfo info = decode::load_g2p(file, path).info;
    if (info.kind != loaded_.info.kind || info.config != loaded_.info.config)
      throw ValueError("--resume: the options describe a different model than " + path + " (" + info.config.dump() +
                       ")");
    return restore_best(file, path, info.step, info.best_val_per, info.best_val_wer);
  }

 private:
  decode::LoadedG2p loaded_;
  std::vector<data::EncodedPair> pairs_;
  std::vector<data::CmudictEntry> dev_;
};

}  // namespace

G2pResult train_g2p(models::TranslatorKind kind, json config, const G2pOptions& o) {
  o.validate();
  G2pTask task(kind, std::move(config), o);
  G2pResult result = task.run_for<G2pResult>(o);
  result.train_pairs = task.train_pairs();
  result.dev_words = task.dev_words();
  return result;
}

}  // namespace attn::train
