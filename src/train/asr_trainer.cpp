#include "attn/train/asr_trainer.h"

#include <fmt/format.h>

#include <filesystem>
#include <optional>

#include "attn/data/parallel.h"
#include "attn/data/speech.h"
#include "attn/data/text.h"
#include "attn/decode/asr.h"
#include "attn/error.h"
#include "attn/io/checkpoint_read.h"
#include "attn/printable.h"
#include "error_rate_task.h"

namespace attn::train {
using nlohmann::json;

void AsrOptions::validate() const {
  detail::check_error_rate_task_options("asr", data_dir, detail::limits_of(*this, eval_utterances), eval_every);
  RunOptions::validate();
}

std::string speech_split_path(const std::string& data_dir, const std::string& split) {
  const std::string path = (std::filesystem::path(data_dir) / (split + ".speech")).string();
  if (!data::file_exists(path))
    throw IoError("no " + split + " set under " + data_dir + " (looked for " + path + "; attn data speech writes it)");
  return path;
}

namespace {

// ValueError naming the file and the utterance for anything the model cannot learn from: no
// utterances, other bins than the model's, fewer frames than the reduction, no transcript.
void check_utterances(const std::vector<data::SpeechUtterance>& utterances, int bins, const std::string& path,
                      const models::AsrConfig& c) {
  if (utterances.empty()) throw ValueError(path + ": the set holds no utterances");
  if (bins != c.bins) throw ValueError(fmt::format("{}: {} bins a frame, the model takes {}", path, bins, c.bins));
  for (const data::SpeechUtterance& u : utterances) {
    if (u.frames < c.reduction)
      throw ValueError(fmt::format("{}: utterance '{}' has {} frames, fewer than the listener's reduction {}", path,
                                   printable(u.id, false, 60), u.frames, c.reduction));
    if (u.text.empty())
      throw ValueError(fmt::format("{}: utterance '{}' has an empty transcript", path, printable(u.id, false, 60)));
  }
}

// ASR for run(): frame-budget batches walked epoch by epoch, dev CER (greedy) as the score.
class AsrTask final : public detail::ErrorRateTask {
 public:
  AsrTask(models::AsrConfig config, const AsrOptions& o)
      : ErrorRateTask(detail::limits_of(o, o.eval_utterances),
                      {"cer", "CER", "utterances", "frames_per_s", "frames/s"}) {
    const std::string train_path = speech_split_path(o.data_dir, "train"),
                      dev_path = speech_split_path(o.data_dir, "dev");
    train_ = data::read_speech_set(train_path);
    if (o.train_limit > 0 && static_cast<int64_t>(train_.utterances.size()) > o.train_limit)
      train_.utterances.resize(static_cast<size_t>(o.train_limit));
    data::SpeechSet dev = data::read_speech_set(dev_path);
    dev_ = std::move(dev.utterances);
    if (o.eval_utterances > 0 && static_cast<int64_t>(dev_.size()) > o.eval_utterances)
      dev_.resize(static_cast<size_t>(o.eval_utterances));
    config.bins = train_.bins;  // the data's features
    check_utterances(train_.utterances, train_.bins, train_path, config);
    check_utterances(dev_, dev.bins, dev_path, config);
    std::vector<std::string> texts;
    for (const data::SpeechUtterance& u : train_.utterances) texts.push_back(u.text);
    loaded_.vocab = data::CharVocab::build(texts);
    config.speller.vocab = loaded_.vocab.size();
    loaded_.info = {config, loaded_.vocab.characters(), 0, 0.0, 0.0};
    loaded_.model = std::make_unique<models::ListenAttendSpell>(config);
    std::vector<data::RowLengths> lengths;  // frames and characters
    for (const data::SpeechUtterance& u : train_.utterances) {
      targets_.push_back(loaded_.vocab.encode(u.text));
      lengths.push_back({static_cast<size_t>(u.frames), targets_.back().size()});
    }
    if (std::FILE* say = o.progress)
      std::fprintf(
          say, "speech: %zu training utterances, %zu dev; %d characters; listen-attend-spell (%s): %lld parameters\n",
          train_.utterances.size(), dev_.size(), loaded_.vocab.size() - data::CharVocab::kFirstCharacter,
          config.speller.effective_score().c_str(), static_cast<long long>(loaded_.model->num_parameters()));
    batches_.emplace(std::move(lengths), o.max_tokens, o.max_sentences, o.seed);
  }

  nn::Module& module() override { return *loaded_.model; }
  std::string label() const override { return "train asr " + loaded_.info.config.speller.effective_score(); }
  int64_t train_utterances() const { return static_cast<int64_t>(train_.utterances.size()); }
  int64_t dev_utterances() const { return static_cast<int64_t>(dev_.size()); }

  StepLoss forward(int64_t step) override {
    std::vector<std::span<const float>> frames;
    models::IdRows targets;
    int64_t characters = 0;  // the targets with EOS: what the loss is the mean over
    for (size_t i : distributed::shard_of(batches_->at(step), shard())) {
      frames.emplace_back(train_.utterances[i].features);
      targets.emplace_back(targets_[i]);
      characters += static_cast<int64_t>(targets_[i].size()) + 1;
      window_items_ += train_.utterances[i].frames;
    }
    const Tensor loss = loaded_.model->loss(models::pack_speech(frames, train_.bins, targets), limits_.label_smoothing);
    last_loss_ = loss.item();
    return {loss, last_loss_, static_cast<double>(characters)};
  }
  Validation validate(int64_t step) override {
    const decode::AsrEval e = decode::evaluate_asr(loaded_, dev_, {.beam = 1});
    loaded_.model->train();
    return scored(step, e.score.cer(), e.score.wer(), e.score.utterances, e.seconds);
  }
  json checkpoint_metadata(const RunState& s, bool best) const override {
    return decode::asr_metadata(info_at(loaded_.info, s, best, &decode::AsrInfo::best_val_cer));
  }
  RunState restore(const io::SafetensorsFile& file, const std::string& path) override {
    const decode::AsrInfo info = decode::load_asr(file, path).info;
    if (info.config.to_json() != loaded_.info.config.to_json() || info.characters != loaded_.info.characters)
      throw ValueError("--resume: the options and data describe a different model than " + path + " (" +
                       info.config.to_json().dump() + ")");
    return restore_best(file, path, info.step, info.best_val_cer, info.best_val_wer);
  }

 private:
  decode::LoadedAsr loaded_;
  data::SpeechSet train_;
  std::vector<data::SpeechUtterance> dev_;
  std::vector<std::vector<int32_t>> targets_;
};

}  // namespace

AsrResult train_asr(models::AsrConfig config, const AsrOptions& o) {
  o.validate();
  config.speller.vocab = data::CharVocab::kFirstCharacter + 1;  // a placeholder until the data gives it
  config.validate();
  AsrTask task(std::move(config), o);
  AsrResult result = task.run_for<AsrResult>(o);
  result.train_utterances = task.train_utterances();
  result.dev_utterances = task.dev_utterances();
  return result;
}

}  // namespace attn::train
