#pragma once
// Private to src/train/ (the translation and G2P trainers): one teacher-forced step of a
// models::Translator.
#include <cstdint>

#include "attn/models/batch.h"
#include "attn/models/translator.h"
#include "attn/train/run.h"

namespace attn::train::detail {

// The loss of `batch` (mean cross-entropy over its non-PAD targets, label smoothing ε),
// weighted by how many targets that is; the count is added to *tokens.
inline StepLoss translator_step(models::Translator& model, const models::Batch& batch, float label_smoothing,
                                int64_t* tokens) {
  const Tensor loss = model.loss(batch, label_smoothing);
  int64_t targets = 0;
  for (int32_t len : batch.tgt_lengths.to_vector_i32()) targets += len;
  *tokens += targets;
  return {loss, loss.item(), static_cast<double>(targets)};
}

}  // namespace attn::train::detail
