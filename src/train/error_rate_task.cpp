#include "error_rate_task.h"

#include <fmt/format.h>

#include "attn/error.h"
#include "attn/io/checkpoint_read.h"

namespace attn::train::detail {
using nlohmann::json;

void check_error_rate_task_options(const char* task, const std::string& data_dir, const ErrorRateTaskLimits& limits,
                                   int64_t eval_every) {
  if (data_dir.empty()) throw ValueError(std::string("a data directory (--data) is required for --task ") + task);
  if (limits.train_limit < 0) throw ValueError("--train-limit must be >= 0");
  if (limits.eval_limit < 0) throw ValueError("--eval-sentences must be >= 0");
  check_batch_options(limits.max_tokens, limits.max_sentences, limits.label_smoothing, eval_every);
}

std::vector<LogField> ErrorRateTask::log_fields(double seconds) {
  const double per_second = seconds > 0 ? static_cast<double>(window_items_) / seconds : 0.0;
  window_items_ = 0;
  return {{"epoch", static_cast<double>(batches_->epoch()), "epoch"},
          {"loss", last_loss_, "loss"},
          {names_.throughput_key, per_second, names_.throughput_label}};
}

json ErrorRateTask::resume_checked_options() const {
  json j = batch_options_json(limits_.max_tokens, limits_.max_sentences, limits_.label_smoothing);
  j["--train-limit"] = limits_.train_limit;
  j["--eval-sentences"] = limits_.eval_limit;
  return j;
}

Validation ErrorRateTask::scored(int64_t step, double rate, double wer, int64_t items, double seconds) {
  if (!has_best_ || rate <= best_rate_) {
    has_best_ = true;
    best_rate_ = rate;
    best_wer_ = wer;
  }
  return {rate,
          {{std::string("val_") + names_.rate_key, rate}, {"val_wer", wer}, {"eval_s", seconds}},
          fmt::format("step {}: dev {} {:.2f} %, WER {:.2f} % ({} {}, greedy, {:.0f} s)", step, names_.rate_label,
                      100 * rate, 100 * wer, items, names_.items, seconds)};
}

RunState ErrorRateTask::restore_best(const io::SafetensorsFile& file, const std::string& path, int64_t step,
                                     double best_rate, double best_wer) {
  io::load_model_parameters(file, module().named_parameters(), path);
  has_best_ = true;
  best_rate_ = best_rate;
  best_wer_ = best_wer;
  return {.step = step, .has_best = true, .best_score = best_rate, .best_step = step};
}

}  // namespace attn::train::detail
