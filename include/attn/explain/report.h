#pragma once
// Jain & Wallace's (2019) summary over many sentences: Kendall τ-b per sentence between the
// attention and each importance measure and between the measures (mean ± sd over the
// sentences where τ is defined, and the share significant at p < 0.05), the permutation
// medians beside the maximum attention weight, the integrated-gradients completeness, and
// accuracy; as JSON (every figure and the per-sentence vectors) and as a Markdown table in
// the paper's layout, beside its SST BiLSTM+tanh row.
//
// The τ tests rank tokens by attention, |gradient × input|, leave-one-out and |IG|, and for
// transformer-cls by [CLS]'s rollout and flow too. Sentences of one report are of one kind.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attn/explain/erasure.h"
#include "attn/explain/importance.h"
#include "attn/explain/kendall.h"

namespace attn::explain {

struct ExplainedSentence {
  std::string text;
  std::vector<std::string> tokens;
  int32_t gold = -1;  // -1: unknown (a --text sentence)
  SentenceImportance importance;
  SentenceErasure erasure;  // Serrano & Smith; left undefined when not run
};

// Serrano & Smith over the sentences whose erasure is defined.
struct ErasureOrderSummary {
  double share_flipped = 0.0;  // sentences whose decision flipped within n − 1 deletions
  double mean_fraction = 0.0;  // of tokens removed at the flip, over those that flipped
};
struct ErasureSummary {
  int64_t defined = 0;
  double top_delta = 0.0, random_delta = 0.0;            // mean |Δŷ|
  double top_flip_share = 0.0, random_flip_share = 0.0;  // decision flips
  ErasureOrderSummary attention, gradient, random;
};

// The measures a τ is computed between, as the report names them.
struct TauPair {
  std::string first, second;  // "attention", "gradient", "loo", "ig"
};
const std::vector<TauPair>& tau_pairs();
// transformer-cls: tau_pairs() and then rollout and flow against gradient and LOO, and the
// raw [CLS] attention against rollout and flow.
const std::vector<TauPair>& transformer_tau_pairs();
// The pairs for a sentence: transformer_tau_pairs() when it has a rollout, else tau_pairs().
const std::vector<TauPair>& tau_pairs_for(const SentenceImportance& s);
// The ranking a measure gives one sentence (empty when it has none: LOO of one token).
std::vector<float> ranking(const SentenceImportance& s, const std::string& measure);

struct TauSummary {
  TauPair pair;
  std::vector<KendallTau> per_sentence;  // one per sentence, in order
  int64_t defined = 0;
  double mean = 0.0, sd = 0.0;     // over the defined ones; sd is the population sd (numpy's std)
  double share_significant = 0.0;  // p < 0.05, over the defined ones
};
// Fills defined, mean, sd and share_significant from t.per_sentence.
void fill_moments(TauSummary& t);

struct ExplainReport {
  std::vector<ExplainedSentence> sentences;
  std::vector<TauSummary> taus;  // in tau_pairs() order
  int64_t one_token_sentences = 0;
  int64_t skipped_empty = 0;  // lines with no tokens, never explained
  double accuracy = 0.0;      // over sentences with a gold label (0 when none)
  int64_t labelled = 0;
  double permutation_median_of_medians = 0.0;
  double share_permutation_median_below_001 = 0.0;  // sentences whose median |Δŷ| < 0.01
  double ig_completeness_mean = 0.0, ig_completeness_max = 0.0;
  double attention_zero_share = 0.0;  // exactly-zero weights of the attention measure, over every token
  bool transformer = false;           // the sentences carry rollout, flow and head statistics
  int64_t with_permutations = 0;      // sentences with a permutation test (bilstm-attn)
  // Jain & Wallace's adversarial attention (bilstm-attn), over the sentences of 2+ tokens
  // that have it: the per-sentence max JSD (nats) with |Δŷ| ≤ the admissible bound.
  int64_t with_adversarial = 0;
  double adversarial_jsd_mean = 0.0, adversarial_jsd_median = 0.0;
  double share_adversarial_jsd_above_05 = 0.0;  // JSD > 0.5 nats (ln 2 ≈ 0.69 is the maximum)
  double adversarial_delta_mean = 0.0;          // |Δŷ| of the reported candidates
  ErasureSummary erasure;
  std::vector<HeadStatistics> heads;  // pooled over the sentences, layer-major
  int64_t heads_per_layer = 0;
};

// skipped_empty is the caller's count of texts it could not explain (no tokens).
ExplainReport summarise(std::vector<ExplainedSentence> sentences, int64_t skipped_empty = 0);
KendallTau sentence_tau(const SentenceImportance& s, const TauPair& pair);

// Everything, per-sentence vectors included. `context` (model, data, split, options) is
// copied in under "run".
nlohmann::json report_json(const ExplainReport& report, const nlohmann::json& context);
// The table beside Jain & Wallace's SST BiLSTM+tanh row, the permutation and completeness
// figures, and a plain-language verdict.
std::string report_markdown(const ExplainReport& report, const nlohmann::json& context);

}  // namespace attn::explain
