#pragma once
// What the trainers that walk token-budget batches (data::token_batches) share (private to
// src/train/: translation, G2P, ASR): the batch options' checks and the walk itself.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "attn/data/parallel.h"

namespace attn::train::detail {

// ValueError naming --max-tokens, --max-sentences, --label-smoothing or --eval-every.
void check_batch_options(int64_t max_tokens, int max_sentences, float label_smoothing, int64_t eval_every);
// {"--max-tokens", "--max-sentences", "--label-smoothing"}: the options a resumed run must share.
nlohmann::json batch_options_json(int64_t max_tokens, int max_sentences, float label_smoothing);

// The batches of the rows, epoch by epoch: epoch e's batches are token_batches(seed, e), walked
// in order, so a resumed run continues with the very batches it would have seen.
class EpochBatches {
 public:
  EpochBatches(std::vector<data::RowLengths> rows, int64_t max_tokens, int max_sentences, uint64_t seed);
  // The row indices of the update with 0-based index `step` (at least the last call's).
  const std::vector<size_t>& at(int64_t step);
  int64_t epoch() const { return epoch_; }
  // The epoch of the step after the latest at(): epoch(), or the next one when that step ended it.
  int64_t next_epoch() const { return epoch_ + (in_epoch_ + 1 == static_cast<int64_t>(batches_.size()) ? 1 : 0); }

 private:
  std::vector<data::RowLengths> rows_;
  int64_t max_tokens_;
  int max_sentences_;
  uint64_t seed_;
  std::vector<std::vector<size_t>> batches_;
  int64_t epoch_ = 0, in_epoch_ = 0, cursor_ = 0;
};

}  // namespace attn::train::detail
