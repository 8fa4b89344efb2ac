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
//
// transformer-cls (models::TransformerClassifier): the same measures over the token
// embeddings √D·E[ids] ([CLS] and positions are not attributed), with two differences: the
// gradient × input is the full gradient (self-attention is not held constant), and there is
// no permutation test (no one attention vector the output is a weighted sum over). Its
// `attention` is the last layer's [CLS] row averaged over the heads, over the tokens (the
// weight on [CLS] itself left out), beside rollout's and flow's [CLS] rows (rollout.h) and
// per-head statistics (head_statistics.h).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attn/explain/adversarial.h"
#include "attn/explain/head_statistics.h"
#include "attn/models/attention_classifier.h"
#include "attn/models/transformer.h"

namespace attn::explain {

struct ImportanceOptions {
  int ig_steps = 50;
  int permutations = 100;
  uint64_t seed = 1;  // the permutations' generator
  // bilstm-attn: Jain & Wallace's adversarial attention (adversarial.h); off when
  // adversarial.steps < 0 (the default options of explain_sentence run it).
  AdversarialOptions adversarial;
};

struct SentenceImportance {
  int32_t label = 0;                                                            // c, argmax of the logits
  float probability = 0.0f;                                                     // ŷ
  std::vector<float> attention, gradient, leave_one_out, integrated_gradients;  // one per token
  float ig_completeness_error = 0.0f;
  float baseline_probability = 0.0f;      // ŷ at the zero baseline
  std::vector<float> permutation_deltas;  // |Δŷ| per permutation
  float permutation_median = 0.0f;
  // A one-token sentence has no leave-one-out (an empty sentence cannot be classified):
  // leave_one_out stays empty and this is false.
  bool has_leave_one_out = false;
  // transformer-cls only (empty otherwise): [CLS]'s rollout and flow rows over the tokens,
  // and the statistics of every head, layer-major (layers × heads_per_layer).
  std::vector<float> rollout, flow;
  // bilstm-attn only: the adversarial attention (has_adversarial false when not run).
  AdversarialResult adversarial;
  bool has_adversarial = false;
  std::vector<HeadStatistics> heads;
  int64_t heads_per_layer = 0;
  bool has_permutations() const { return !permutation_deltas.empty(); }
};

// What the kind-independent measures (leave-one-out, integrated gradients, full gradient ×
// input) need of a classifier: its token embeddings and the logits computed from them.
struct EmbeddingClassifier {
  nn::Module* module = nullptr;
  int64_t classes = 0;
  std::function<Tensor(const Tensor& ids)> embed;                                 // (B, S) → (B, S, emb)
  std::function<Tensor(const Tensor& embeddings, const Tensor& lengths)> logits;  // → (B, classes)
};
EmbeddingClassifier embedding_classifier(models::AttnClassifier& model);
EmbeddingClassifier embedding_classifier(models::TransformerClassifier& model);

// ids: the sentence's token ids (at least one; ValueError otherwise).
SentenceImportance explain_sentence(models::AttnClassifier& model, const std::vector<int32_t>& ids,
                                    const ImportanceOptions& options = {});

// transformer-cls: tokens[s] is token s's text, for the punctuation statistic (ids.size()
// of them; ShapeError otherwise).
SentenceImportance explain_sentence(models::TransformerClassifier& model, const std::vector<int32_t>& ids,
                                    const std::vector<std::string>& tokens, const ImportanceOptions& options = {});

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
IntegratedGradients integrated_gradients(models::AttnClassifier& model, const std::vector<int32_t>& ids, int32_t label,
                                         int steps);
// The kind-independent forms: Σ_d ∂ŷ/∂e_{s,d} · e_{s,d} with nothing held constant; LOO; IG.
std::vector<float> class_probability(const EmbeddingClassifier& model, const Tensor& ids, const Tensor& lengths,
                                     int32_t label);
// The predicted class (argmax) of each row of ids (B, S) with lengths (B).
std::vector<int32_t> predicted_labels(const EmbeddingClassifier& model, const Tensor& ids, const Tensor& lengths);
std::vector<float> full_gradient_times_input(const EmbeddingClassifier& model, const std::vector<int32_t>& ids,
                                             int32_t label);
std::vector<float> leave_one_out(const EmbeddingClassifier& model, const std::vector<int32_t>& ids, int32_t label);
IntegratedGradients integrated_gradients(const EmbeddingClassifier& model, const std::vector<int32_t>& ids,
                                         int32_t label, int steps);
std::vector<float> permutation_deltas(models::AttnClassifier& model, const std::vector<int32_t>& ids, int32_t label,
                                      int permutations, uint64_t seed);

}  // namespace attn::explain
