#pragma once
// Private to src/train/ (the translation and G2P trainers): one teacher-forced step of a
// models::Translator.
#include <cstdint>

#include "attn/models/batch.h"
#include "attn/models/seq2seq.h"
#include "attn/models/translator.h"
#include "attn/train/run.h"

namespace attn::train::detail {

// The loss of `batch` (mean cross-entropy over its non-PAD targets, label smoothing ε),
// weighted by how many targets that is; the count is added to *tokens. An RNN translator
// runs one block of rows per thread, backward included, where that is exact
// (Seq2Seq::loss_backward_in_row_blocks).
inline StepLoss translator_step(models::Translator& model, const models::Batch& batch, float label_smoothing,
                                int64_t* tokens) {
  int64_t targets = 0;
  for (int32_t len : batch.tgt_lengths.to_vector_i32()) targets += len;
  *tokens += targets;
  if (models::Seq2Seq* rnn = model.rnn())
    if (const auto in_blocks = rnn->loss_backward_in_row_blocks(batch, label_smoothing))
      return {Tensor(), in_blocks->loss, static_cast<double>(targets), /*backward_done=*/true};
  const Tensor loss = model.loss(batch, label_smoothing);
  return {loss, loss.item(), static_cast<double>(targets)};
}

}  // namespace attn::train::detail
