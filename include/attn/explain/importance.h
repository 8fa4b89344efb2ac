#pragma once
// Per-token importance measures for the attention classifier (models::AttnClassifier), and
// the tests of Jain & Wallace (2019), "Attention is not Explanation", over one sentence.
//
// ŷ is the probability of the class the model predicts for the whole sentence (c), so
// every measure below is about the same output:
//   gradient × input   g_s = Σ_d ∂ŷ/∂e_{s,d} · e_{s,d}, with the attention weights held
//                      constant (detached) as in the paper; signed (the τ tests use |g_s|)
//   leave-one-out      loo_s = |ŷ(x) − ŷ(x without token s)|  (the token deleted, re-run)
//   integrated grads   ig_s = Σ_d e_{s,d} · (1/m) Σ_{k=1..m} ∂ŷ/∂e_{s,d} at (k/m) e, the zero
//                      baseline, m steps (right Riemann sum), the full gradient (the attention
//                      is part of the function here); signed. completeness_error =
//                      |Σ_s ig_s − (ŷ(e) − ŷ(0))|
//   permutation        the attention weights permuted at random with the encoder states fixed,
//                      |ŷ(x) − ŷ_perm| for each of n permutations; their median
// All run in eval mode; the model's training flag is restored.
#include <cstdint>
#include <vector>

#include "attn/models/attention_classifier.h"

namespace attn::explain {

struct ImportanceOptions {
  int ig_steps = 50;
  int permutations = 100;
  uint64_t seed = 1;  // the permutations' generator
};

struct SentenceImportance {
  int32_t label = 0;          // c, argmax of the logits
  float probability = 0.0f;   // ŷ
  std::vector<float> attention, gradient, leave_one_out, integrated_gradients;  // one per token
  float ig_completeness_error = 0.0f;
  float baseline_probability = 0.0f;       // ŷ at the zero baseline
  std::vector<float> permutation_deltas;   // |Δŷ| per permutation
  float permutation_median = 0.0f;
  // A one-token sentence has no leave-one-out (an empty sentence cannot be classified):
  // leave_one_out stays empty and this is false.
  bool has_leave_one_out = false;
};

// ids: the sentence's token ids (at least one; ValueError otherwise).
SentenceImportance explain_sentence(models::AttnClassifier& model, const std::vector<int32_t>& ids,
                                    const ImportanceOptions& options = {});

// The pieces, for tests and other callers. Each is ŷ-based for class `label`.
// ŷ (the probability of `label`) for each row of ids (B, S) with lengths (B).
std::vector<float> class_probability(models::AttnClassifier& model, const Tensor& ids, const Tensor& lengths,
                                     int32_t label);
std::vector<float> gradient_times_input(models::AttnClassifier& model, const std::vector<int32_t>& ids, int32_t label);
std::vector<float> leave_one_out(models::AttnClassifier& model, const std::vector<int32_t>& ids, int32_t label);
struct IntegratedGradients {
  std::vector<float> attributions;
  float completeness_error = 0.0f;
  float baseline_probability = 0.0f;
};
IntegratedGradients integrated_gradients(models::AttnClassifier& model, const std::vector<int32_t>& ids,
                                         int32_t label, int steps);
std::vector<float> permutation_deltas(models::AttnClassifier& model, const std::vector<int32_t>& ids, int32_t label,
                                      int permutations, uint64_t seed);

}  // namespace attn::explain
