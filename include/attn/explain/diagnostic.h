#pragma once
// Wiegreffe & Pinter's (2019) diagnostic, at evaluation time: the non-contextual `average`
// bilstm-attn model (h_s = tanh(W e_s + b), no RNN) pools its states with weights imposed from
// outside — another model's attention, uniform weights — in place of its own, and its
// accuracy with each is compared. If a BiLSTM's attention helps the average model more than
// uniform weights do, the weights carry information about the tokens beyond the BiLSTM's
// context. (W&P also retrain the MLP with the weights frozen; this is the test-time form.)
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
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

// The diagnostic over a split of SST-2 (what `attn explain --diagnostic` runs): the checkpoint
// `model` (an average-encoder bilstm-attn) pools with its own attention, uniform weights and
// the attention of `attention_from` (a bilstm-attn); the accuracy of each, beside
// attention_from's own. With trained_uniform / trained_imposed (paths, or empty), also W&P's
// retrained variants: an average model trained with uniform pooling, and one trained with
// attention_from's attention frozen in (attn train --attention-from), scored the same way.
struct DiagnosticRun {
  std::string model, attention_from, trained_uniform, trained_imposed;  // checkpoints
  std::string data, split;                                              // the SST-2 folder, dev | test
  int64_t limit = 0;                                                    // the first N sentences (0: all)
};
struct DiagnosticResult {
  int64_t sentences = 0, skipped_empty = 0;
  double own = 0.0, uniform = 0.0, imposed = 0.0;  // the average model's accuracy with each
  double source = 0.0;                             // attention_from's own accuracy
  std::optional<double> trained_uniform, trained_imposed;
  models::PoolingEncoder source_encoder = models::PoolingEncoder::lstm;
  models::PoolingScore source_pooling = models::PoolingScore::additive;
};
// ValueError naming the checkpoint that is not of the kind its role needs, or for a split with
// no sentence of tokens. progress(i, n): before the first of n sentences (i = 0) and after each.
DiagnosticResult run_diagnostic(const DiagnosticRun& run, const std::function<void(int64_t, int64_t)>& progress = {});
// diagnostic.json and diagnostic.md.
nlohmann::json diagnostic_json(const DiagnosticRun& run, const DiagnosticResult& result);
std::string diagnostic_markdown(const DiagnosticRun& run, const DiagnosticResult& result);

}  // namespace attn::explain
