#include "attn/train/translation_trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>

#include "attn/autodiff/tape.h"
#include "attn/data/bleu.h"
#include "attn/data/parallel.h"
#include "attn/data/rouge.h"
#include "attn/data/text.h"
#include "attn/decode/checkpoint_kind.h"
#include "attn/error.h"
#include "attn/io/atomic_file.h"
#include "attn/io/checksum.h"
#include "attn/io/safetensors.h"
#include "attn/models/memory_estimate.h"
#include "attn/train/checkpoint.h"
#include "epoch_batches.h"
#include "translator_step.h"

namespace attn::train {
namespace fs = std::filesystem;
using nlohmann::json;

void TranslationOptions::validate() const {
  const char* task = summarization ? "summarize" : "translate";
  if (data_dir.empty()) throw ValueError(std::string("a data directory (--data) is required for --task ") + task);
  if (src_lang.empty() || tgt_lang.empty() || src_lang == tgt_lang)
    throw ValueError(std::string("--src and --tgt must name two different ") +
                     (summarization ? "file suffixes" : "languages") + ", got '" + src_lang + "' and '" + tgt_lang +
                     "'");
  if (vocab_size < 16 || vocab_size > models::kMaxVocab)
    throw ValueError("--vocab-size must be in [16, " + std::to_string(models::kMaxVocab) + "], got " +
                     std::to_string(vocab_size));
  if (max_len < 2 || max_len > models::kMaxLength)
    throw ValueError("--max-len must be in [2, " + std::to_string(models::kMaxLength) + "], got " +
                     std::to_string(max_len));
  if (train_limit < 0) throw ValueError("--train-limit must be >= 0");
  if (max_tokens < 2 * int64_t{max_len} + 1)
    throw ValueError("--max-tokens " + std::to_string(max_tokens) + " cannot hold one pair of --max-len " +
                     std::to_string(max_len) + " (needs >= " + std::to_string(2 * int64_t{max_len} + 1) + ")");
  if (max_sentences < 1) throw ValueError("--max-sentences must be >= 1");
  if (!(label_smoothing >= 0.0f && label_smoothing < 1.0f))
    throw ValueError("--label-smoothing must be in [0, 1), got " + std::to_string(label_smoothing));
  if (eval_sentences < 0) throw ValueError("--eval-sentences must be >= 0");
  if (eval_every < 1) throw ValueError("--eval-every must be >= 1, got " + std::to_string(eval_every));
  RunOptions::validate();
}

namespace {

// Translation for run(): token-budget batches walked epoch by epoch, label-smoothed loss,
// validation BLEU (greedy) as the score.
class TranslationTask final : public Task {
 public:
  TranslationTask(models::TranslatorKind kind, json config, const TranslationOptions& o) : o_(o) {
    const fs::path dir(o.out_dir);
    const std::string spm_prefix = (dir / "spm").string();
    const std::string spm_path = spm_prefix + ".model";
    // What can be checked before anything is written or learned.
    if (o.resume && !fs::exists(dir / "last.safetensors"))
      throw IoError((dir / "last.safetensors").string() + ": nothing to resume (no such file)");
    // Issue 18 item 13: another task's run was given a learned spm.model before the resume failed.
    if (o.resume) {
      const std::string last = (dir / "last.safetensors").string();
      if (decode::find_checkpoint_kind(last) != decode::CheckpointKind::translation)
        throw ValueError("--resume: " + last + " is not a translation run (format '" + checkpoint_format(last) +
                         "'): resume it with its own --task, or give another --out");
    }
    if (!o.tokenizer.empty()) data::SubwordModel::load(o.tokenizer);  // IoError naming it when it is not one
    // The data before the folder: a bad corpus file leaves no run folder behind.
    data::ParallelCorpus train_text =
        data::load_corpus(o.corpus, o.data_dir, "train", o.src_lang, o.tgt_lang, o.train_limit);
    val_text_ = data::load_corpus(o.corpus, o.data_dir, "val", o.src_lang, o.tgt_lang, o.eval_sentences);
    folder_ = lock_run_folder(o);  // before the tokenizer is written into it

    std::FILE* say = o.progress;
    // The tokenizer: given, kept from the run being resumed, or learned on the training text,
    // by rank 0 of a data-parallel run (the others read rank 0's from the folder, or --tokenizer).
    const bool writes_folder = !o.communicator || o.communicator->rank() == 0;
    if (writes_folder && !o.tokenizer.empty()) {
      if (fs::absolute(o.tokenizer) != fs::absolute(spm_path)) {
        io::copy_file_atomically(o.tokenizer, spm_path);
      }
    } else if (writes_folder && !(o.resume && data::file_exists(spm_path))) {
      if (say)
        std::fprintf(say, "learning a shared %d-piece SentencePiece model on %zu + %zu lines\n", o.vocab_size,
                     train_text.src.size(), train_text.tgt.size());
      std::vector<std::string> lines = train_text.src;
      lines.insert(lines.end(), train_text.tgt.begin(), train_text.tgt.end());
      data::train_subword_model(lines, spm_prefix, {.vocab_size = o.vocab_size});
    }
    if (o.communicator) o.communicator->barrier();  // rank 0's tokenizer is written
    run_.tokenizer = data::SubwordModel::load(writes_folder || o.tokenizer.empty() ? spm_path : o.tokenizer);
    const int64_t V = run_.tokenizer->vocab_size();
    models::set_translator_vocab(kind, config, V);
    // The pointer-generator trains on the extended ids of each pair (models/pointer.h).
    train_data_ =
        data::encode_parallel(train_text, *run_.tokenizer, *run_.tokenizer, o.max_len, config.value("pointer", false));
    if (say)
      std::fprintf(say, "%zu training pairs (%lld truncated to %d pieces), %zu validation sentences, vocabulary %lld\n",
                   train_data_.pairs.size(), static_cast<long long>(train_data_.truncated), o.max_len,
                   val_text_.src.size(), static_cast<long long>(V));
    run_.info = {kind, config, o.src_lang, o.tgt_lang, spm_path, 0, 0.0, o.summarization, o.corpus};
    run_.model = models::make_translator(kind, config);
    if (say && !o.resume)
      std::fprintf(say, "%s model: %lld parameters\n", models::to_string(kind),
                   static_cast<long long>(run_.model->module().num_parameters()));
    batches_.emplace(data::pair_lengths(train_data_.pairs), o.max_tokens, o.max_sentences, o.seed);
  }

  nn::Module& module() override { return run_.model->module(); }
  std::string label() const override { return std::string("train ") + models::to_string(run_.info.kind); }

  StepLoss forward(int64_t step) override {
    const data::Batch batch = data::make_pair_batch(
        train_data_.pairs, distributed::shard_of(batches_->at(step), shard()), run_.model->vocab());
    const StepLoss out = detail::translator_step(*run_.model, batch, o_.label_smoothing, &window_tokens_);
    last_loss_ = out.reported;
    return out;
  }
  std::vector<LogField> log_fields(double seconds) override {
    const double epoch = static_cast<double>(batches_->next_epoch());  // as the log has always said
    const double tokens_per_s = seconds > 0 ? window_tokens_ / seconds : 0.0;
    total_tokens_ += window_tokens_;
    window_tokens_ = 0;
    return {{"epoch", epoch, "epoch"}, {"loss", last_loss_, "loss"}, {"tokens_per_s", tokens_per_s, "tok/s"}};
  }
  Validation validate(int64_t step) override {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::string> hypotheses;
    for (auto& t : decode::translate(run_, val_text_.src, {.beam = 1, .batch = 100}))
      hypotheses.push_back(std::move(t.text));
    const data::BleuResult bleu = data::corpus_bleu(hypotheses, val_text_.tgt);
    json fields = {{"val_bleu", bleu.score}, {"val_bleu_line", bleu.to_string()}};
    std::string scores = bleu.to_string();
    if (o_.summarization) {
      const data::RougeResult rouge = data::corpus_rouge(hypotheses, val_text_.tgt);
      fields["val_rouge1"] = 100 * rouge.scores[0].f1;  // F1 x 100, as BLEU
      fields["val_rouge2"] = 100 * rouge.scores[1].f1;
      fields["val_rougeL"] = 100 * rouge.scores[2].f1;
      scores = rouge.to_string() + ", " + scores;
    }
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fields["eval_s"] = took;
    char message[512];
    std::snprintf(message, sizeof message, "step %lld: validation %s (greedy, %.0f s)", static_cast<long long>(step),
                  scores.c_str(), took);
    return {bleu.score, fields, message};
  }
  bool higher_is_better() const override { return true; }
  json checkpoint_metadata(const RunState& s, bool best) const override {
    decode::TranslationInfo info = run_.info;
    info.step = best ? s.best_step : s.step;
    info.best_val_bleu = s.best_score;
    return decode::translation_metadata(info, run_.model->vocab());
  }
  RunState restore(const io::SafetensorsFile& file, const std::string& path) override {
    const decode::TranslationInfo info = decode::load_translator(file, path).info;
    if (info.kind != run_.info.kind || info.config != run_.info.config)
      throw ValueError("--resume: the options describe a different model than " + path + " (" + info.config.dump() +
                       ")");
    if (info.corpus != run_.info.corpus)
      throw ValueError("--resume: " + path + " was trained on " + data::to_string(info.corpus) + ", --data gives " +
                       data::to_string(run_.info.corpus));
    load_model_parameters(file, module().named_parameters(), path);
    return {.step = info.step, .has_best = true, .best_score = info.best_val_bleu, .best_step = info.step};
  }
  json resume_checked_options() const override {
    json j = detail::batch_options_json(o_.max_tokens, o_.max_sentences, o_.label_smoothing);
    j["--max-len"] = o_.max_len;
    j["--train-limit"] = o_.train_limit;
    return j;
  }
  int64_t tokens_seen() const { return total_tokens_ + window_tokens_; }

 private:
  const TranslationOptions& o_;
  std::shared_ptr<void> folder_;
  decode::LoadedTranslator run_;
  data::ParallelCorpus val_text_;
  data::EncodedCorpus train_data_;
  std::optional<detail::EpochBatches> batches_;  // once the data is read
  double last_loss_ = 0.0;
  int64_t window_tokens_ = 0, total_tokens_ = 0;
};

}  // namespace

TranslationResult train_translation(models::TranslatorKind kind, json config, const TranslationOptions& o) {
  o.validate();
  TranslationTask task(kind, std::move(config), o);
  TranslationResult result(run(task, o));
  result.tokens_per_second = per_second(static_cast<double>(task.tokens_seen()), result.train_seconds);
  return result;
}

}  // namespace attn::train
