#pragma once
// What the ASR and G2P tasks share (private to src/train/): token-budget batches walked epoch
// by epoch, the loss and throughput log, an error rate (CER, PER) as the score, lower is
// better, with the WER of the kept model beside it, and the options a resumed run must share.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "attn/io/safetensors.h"
#include "attn/train/run.h"
#include "epoch_batches.h"

namespace attn::train::detail {

// The data and batch options of such a task, whatever its options struct names them.
struct ErrorRateTaskLimits {
  int64_t train_limit = 0;  // --train-limit
  int64_t eval_limit = 0;   // --eval-sentences
  int64_t max_tokens = 0;
  int max_sentences = 0;
  float label_smoothing = 0.0f;
};

// The limits of an options struct with train_limit, max_tokens, max_sentences and
// label_smoothing, and `eval_limit` (what it calls --eval-sentences).
template <class Options>
ErrorRateTaskLimits limits_of(const Options& o, int64_t eval_limit) {
  return {o.train_limit, eval_limit, o.max_tokens, o.max_sentences, o.label_smoothing};
}

// ValueError for no --data (naming --task `task`), a negative --train-limit or
// --eval-sentences, or a bad batch option (check_batch_options).
void check_error_rate_task_options(const char* task, const std::string& data_dir, const ErrorRateTaskLimits& limits,
                                   int64_t eval_every);

// The scored measure of a task: "cer" in the log fields ("val_cer"), "CER" in the messages;
// what its items are ("utterances"); what the throughput counts ("frames_per_s", "frames/s").
struct ErrorRateNames {
  const char *rate_key, *rate_label, *items, *throughput_key, *throughput_label;
};

class ErrorRateTask : public Task {
 public:
  bool higher_is_better() const override { return false; }
  std::vector<LogField> log_fields(double seconds) override;
  nlohmann::json resume_checked_options() const override;
  // run() of this task as a Result (AsrResult, G2pResult): the run's figures and the WER of the
  // kept model.
  template <class Result>
  Result run_for(const RunOptions& o) {
    Result result(run(*this, o));
    result.best_val_wer = best_wer_;
    return result;
  }

 protected:
  ErrorRateTask(const ErrorRateTaskLimits& limits, const ErrorRateNames& names) : limits_(limits), names_(names) {}
  // The validation of `step`: the dev error rate and WER of `items` rows (greedy) in `seconds`.
  // Keeps the WER of the best rate so far (run() keeps that model; ties: the later).
  Validation scored(int64_t step, double rate, double wer, int64_t items, double seconds);
  // `info` (decode::AsrInfo, G2pInfo) for a checkpoint at `s` (best: model.safetensors): its
  // step, its run's best rate (into the field `best_rate`) and the WER of the kept model.
  template <class Info>
  Info info_at(Info info, const RunState& s, bool best, double Info::*best_rate) const {
    info.step = best ? s.best_step : s.step;
    info.*best_rate = s.best_score;
    info.best_val_wer = best_wer_;
    return info;
  }
  // --resume: loads `file`'s parameters into module() and the best rate and WER of its run.
  RunState restore_best(const io::SafetensorsFile& file, const std::string& path, int64_t step, double best_rate,
                        double best_wer);

  const ErrorRateTaskLimits limits_;
  std::optional<EpochBatches> batches_;  // once the data is read
  double last_loss_ = 0.0;
  int64_t window_items_ = 0;  // what the throughput counts (frames, tokens) since the last log line

 private:
  const ErrorRateNames names_;
  bool has_best_ = false;
  double best_rate_ = 0.0, best_wer_ = 0.0;
};

}  // namespace attn::train::detail
