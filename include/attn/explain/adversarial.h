#pragma once
// Jain & Wallace's (2019) adversarial attention for the attention-pooling classifier
// (models::AttnClassifier): with the encoder states h (n, E) fixed, K candidate distributions
// a_k = softmax(z_k) over the n tokens are optimised with Adam to be as far as possible from
// the model's own attention α while keeping the output where it was:
//
//   maximise  O(z_k) = JSD(a_k, α) − λ · max(0, |ŷ(a_k) − ŷ(α)| − ε)     for each k,
//   JSD(a, α) = ½ KL(a ‖ m) + ½ KL(α ‖ m), m = ½(a + α), in nats (at most ln 2),
//   ŷ(a) = softmax(out(Σ_s a_s h_s))[c], c the class the model predicts,
//
// ε = 0.01 by default (the paper's). The K candidates start at log α plus Gaussian noise of
// sd `init_noise` (seeded) and are stepped together: each Adam step updates all K × n logits. After every
// step each candidate's |Δŷ| is measured; the report keeps the candidate (over all steps and
// candidates) with the largest JSD among those with |Δŷ| ≤ `admissible` (0.05 by default, the
// paper's reporting bound). The original attention itself is admissible (JSD 0), so a
// sentence always has a result.
//
// Gradients are analytic (the pooling is Σ a_s h_s and out is one Linear layer, in eval mode):
//   ∂JSD/∂a_s = ½ ln(a_s / m_s);  ∂ŷ/∂a_s = h_s · Wᵀ ŷ(e_c − p);  through the softmax
//   ∂O/∂z_s = a_s (g_s − Σ_t a_t g_t).
#include <cstdint>
#include <vector>

#include "attn/models/attention_classifier.h"

namespace attn::explain {

struct AdversarialOptions {
  int candidates = 5;  // K
  int steps = 500;     // Adam steps (0: only the starting points are measured)
  float learning_rate = 0.05f;
  float epsilon = 0.01f;        // the hinge's margin on |Δŷ|
  float hinge_weight = 100.0f;  // λ
  float admissible = 0.05f;     // the reporting bound on |Δŷ|
  float init_noise = 1.0f;      // sd of the starting logits' noise
  uint64_t seed = 1;
};

struct AdversarialResult {
  std::vector<float> attention;               // the best admissible candidate (n)
  float jsd = 0.0f;                           // its JSD from the original attention (nats)
  float delta = 0.0f;                         // its |Δŷ|
  float max_attention = 0.0f;                 // max_s α_s
  std::vector<float> final_jsd, final_delta;  // each candidate after the last step (K)
};

// JSD(a, b) in nats; a and b distributions of equal length (ShapeError otherwise). Terms with
// a zero weight contribute 0 (0 ln 0 = 0).
double jensen_shannon(const std::vector<float>& a, const std::vector<float>& b);

// The objective for candidate logits z (K, n, row-major) against attention α (n), encoder
// states h (n, E, row-major) and the output layer W (C, E), bias (C); class c, ŷ0 the
// original probability. Returns O per candidate and, when `gradient` is given, fills it with
// ∂O/∂z (K, n). Free of the model so that tests can check it on their own numbers.
struct AdversarialProblem {
  std::vector<float> alpha;   // (n)
  std::vector<float> states;  // (n, E)
  std::vector<float> weight;  // (C, E)
  std::vector<float> bias;    // (C)
  int64_t n = 0, E = 0, C = 0;
  int32_t label = 0;
  float original = 0.0f;  // ŷ0
};
// The probability ŷ(a) of `label` for each of K distributions a (K, n).
std::vector<float> adversarial_probability(const AdversarialProblem& p, const std::vector<float>& a, int64_t K);
std::vector<float> adversarial_objective(const AdversarialProblem& p, const std::vector<float>& z, int64_t K,
                                         float epsilon, float hinge_weight, std::vector<float>* gradient = nullptr);

// The problem for one sentence of a bilstm-attn model (eval mode; its training flag is
// restored): the states, the model's attention, class c = argmax and ŷ0.
AdversarialProblem adversarial_problem(models::AttnClassifier& model, const std::vector<int32_t>& ids);

AdversarialResult adversarial_attention(const AdversarialProblem& problem, const AdversarialOptions& options = {});
AdversarialResult adversarial_attention(models::AttnClassifier& model, const std::vector<int32_t>& ids,
                                        const AdversarialOptions& options = {});

}  // namespace attn::explain
