#include "epoch_batches.h"

#include <string>
#include <utility>

#include "attn/error.h"

namespace attn::train::detail {

void check_batch_options(int64_t max_tokens, int max_sentences, float label_smoothing, int64_t eval_every) {
  if (max_tokens < 1) throw ValueError("--max-tokens must be >= 1, got " + std::to_string(max_tokens));
  if (max_sentences < 1) throw ValueError("--max-sentences must be >= 1");
  if (!(label_smoothing >= 0.0f && label_smoothing < 1.0f))
    throw ValueError("--label-smoothing must be in [0, 1), got " + std::to_string(label_smoothing));
  if (eval_every < 1) throw ValueError("--eval-every must be >= 1, got " + std::to_string(eval_every));
}

nlohmann::json batch_options_json(int64_t max_tokens, int max_sentences, float label_smoothing) {
  return {{"--max-tokens", max_tokens}, {"--max-sentences", max_sentences}, {"--label-smoothing", label_smoothing}};
}

EpochBatches::EpochBatches(std::vector<data::RowLengths> rows, int64_t max_tokens, int max_sentences, uint64_t seed)
    : rows_(std::move(rows)),
      max_tokens_(max_tokens),
      max_sentences_(max_sentences),
      seed_(seed),
      batches_(data::token_batches(rows_, max_tokens, max_sentences, seed, 0)) {}

const std::vector<size_t>& EpochBatches::at(int64_t step) {
  for (; cursor_ < step; ++cursor_)
    if (++in_epoch_ == static_cast<int64_t>(batches_.size())) {
      batches_ = data::token_batches(rows_, max_tokens_, max_sentences_, seed_, ++epoch_);
      in_epoch_ = 0;
    }
  return batches_[static_cast<size_t>(in_epoch_)];
}

}  // namespace attn::train::detail
