#pragma once
// The summary of seq2seq_importance.h over many sources: Kendall τ-b per TARGET token between
// the attention row, |gradient × input| and leave-one-out (and between the two measures),
// mean ± sd over the target tokens where τ is defined and the share with p < 0.05; and
// alignment agreement: the share of target tokens whose argmax source position is the same
// under two rankings (ties: the first maximum). Target tokens of one-token sources have no
// LOO and no τ (counted, never NaN). As JSON (every figure and every per-token vector) and
// as Markdown with a plain-language verdict.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attn/explain/kendall.h"
#include "attn/explain/report.h"
#include "attn/explain/seq2seq_importance.h"

namespace attn::explain {

struct ExplainedPair {
  std::string text;                                       // the source as given (a line or the symbols)
  std::vector<std::string> source_tokens, target_tokens;  // printable, one per id
  PairImportance importance;
};

// The rows a measure gives pair p at target token t: "attention", "gradient" (|g|), "loo".
std::vector<float> target_ranking(const PairImportance& p, size_t t, const std::string& measure);
// The pairs of measures compared: attention-gradient, attention-loo, gradient-loo.
const std::vector<TauPair>& seq2seq_tau_pairs();
// The position of the first maximum (0 for an empty row).
size_t argmax_position(const std::vector<float>& row);

struct AgreementSummary {
  TauPair pair;
  int64_t tokens = 0;  // target tokens compared
  int64_t agreed = 0;  // whose argmax source positions are equal
  double share() const { return tokens > 0 ? static_cast<double>(agreed) / static_cast<double>(tokens) : 0.0; }
};

struct Seq2SeqReport {
  std::vector<ExplainedPair> pairs;
  std::vector<TauSummary> taus;             // per_sentence holds one τ per target token, pairs in order
  std::vector<AgreementSummary> agreement;  // in seq2seq_tau_pairs() order
  int64_t target_tokens = 0;
  int64_t one_token_sources = 0;
  int64_t skipped_empty = 0;
  double mean_target_log_prob = 0.0;  // over every target token
  double attention_zero_share = 0.0;  // exactly-zero attention weights over every row (sparsemax / entmax give them)
};

Seq2SeqReport summarise_seq2seq(std::vector<ExplainedPair> pairs, int64_t skipped_empty = 0);
nlohmann::json seq2seq_report_json(const Seq2SeqReport& report, const nlohmann::json& context);
std::string seq2seq_report_markdown(const Seq2SeqReport& report, const nlohmann::json& context);

}  // namespace attn::explain
