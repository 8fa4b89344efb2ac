#pragma once
// Wiegreffe & Pinter's (2019) diagnostic, at evaluation time: the non-contextual `average`
// bilstm-attn model (h_s = tanh(W e_s + b), no RNN) pools its states with weights imposed from
// outside — another model's attention, uniform weights — in place of its own, and its
// accuracy with each is compared. If a BiLSTM's attention helps the average model more than
// uniform weights do, the weights carry information about the tokens beyond the BiLSTM's
// context. (W&P also retrain the MLP with the weights frozen; this is the test-time form.)
#include <cstdint>
#include <vector>

#include "attn/models/attention_classifier.h"

namespace attn::explain {

// The class probabilities (classes) of `model` on one sentence (n ids) whose pooling weights
// are `weights` (n, summing to 1; ShapeError on a length mismatch). Eval mode; the training
// flag is restored.
std::vector<float> probabilities_with_weights(models::AttnClassifier& model, const std::vector<int32_t>& ids,
                                              const std::vector<float>& weights);
// The model's own attention over the sentence (n), in eval mode.
std::vector<float> own_attention(models::AttnClassifier& model, const std::vector<int32_t>& ids);

}  // namespace attn::explain
