#include "attn/data/rouge.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "attn/data/bleu.h"
#include "attn/error.h"
#include "attn/json.h"

namespace attn::data {
namespace {

bool is_rouge_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

double fmeasure(double precision, double recall) {
  return precision + recall > 0.0 ? 2.0 * precision * recall / (precision + recall) : 0.0;
}

using NgramCounts = std::map<std::vector<std::string>, int64_t>;

NgramCounts ngram_counts(const std::vector<std::string>& tokens, size_t n) {
  NgramCounts counts;
  for (size_t i = 0; i + n <= tokens.size(); ++i)
    ++counts[std::vector<std::string>(tokens.begin() + static_cast<std::ptrdiff_t>(i),
                                      tokens.begin() + static_cast<std::ptrdiff_t>(i + n))];
  return counts;
}

// The longest common subsequence's length, one row of the table at a time: O(|a|·|b|) time,
// O(|b|) memory.
size_t lcs_length(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<size_t> prev(b.size() + 1, 0), row(b.size() + 1, 0);
  for (const std::string& x : a) {
    for (size_t j = 0; j < b.size(); ++j) row[j + 1] = x == b[j] ? prev[j] + 1 : std::max(prev[j + 1], row[j]);
    std::swap(prev, row);
  }
  return prev[b.size()];
}

constexpr const char* kRougeNames[3] = {"rouge1", "rouge2", "rougeL"};

}  // namespace

std::vector<std::string> rouge_tokens(const std::string& text) {
  // str.lower() first (the full Unicode mapping: 'İ' lowers to 'i' + a combining dot), then
  // re.sub(r"[^a-z0-9]+", " ") and the tokens that are left.
  const std::string lower = lowercase_unicode(text);
  std::vector<std::string> tokens;
  std::string token;
  for (char c : lower) {
    if (is_rouge_char(c)) {
      token += c;
    } else if (!token.empty()) {
      tokens.push_back(std::move(token));
      token.clear();
    }
  }
  if (!token.empty()) tokens.push_back(std::move(token));
  return tokens;
}

RougeScore rouge_n(const std::vector<std::string>& hypothesis, const std::vector<std::string>& reference, int n) {
  if (n < 1) throw ValueError(fmt::format("rouge_n: n must be >= 1, got {}", n));
  const NgramCounts hyp = ngram_counts(hypothesis, static_cast<size_t>(n));
  const NgramCounts ref = ngram_counts(reference, static_cast<size_t>(n));
  int64_t matches = 0, hyp_total = 0, ref_total = 0;
  for (const auto& [gram, count] : hyp) hyp_total += count;
  for (const auto& [gram, count] : ref) {
    ref_total += count;
    const auto hit = hyp.find(gram);
    if (hit != hyp.end()) matches += std::min(count, hit->second);
  }
  RougeScore s;
  s.precision = static_cast<double>(matches) / static_cast<double>(std::max<int64_t>(hyp_total, 1));
  s.recall = static_cast<double>(matches) / static_cast<double>(std::max<int64_t>(ref_total, 1));
  s.f1 = fmeasure(s.precision, s.recall);
  return s;
}

RougeScore rouge_l(const std::vector<std::string>& hypothesis, const std::vector<std::string>& reference) {
  if (hypothesis.empty() || reference.empty()) return {};
  const auto lcs = static_cast<double>(lcs_length(hypothesis, reference));
  RougeScore s;
  s.precision = lcs / static_cast<double>(hypothesis.size());
  s.recall = lcs / static_cast<double>(reference.size());
  s.f1 = fmeasure(s.precision, s.recall);
  return s;
}

RougeResult corpus_rouge(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references) {
  if (hypotheses.size() != references.size())
    throw ValueError(
        fmt::format("corpus_rouge: {} hypotheses but {} references", hypotheses.size(), references.size()));
  if (hypotheses.empty()) throw ValueError("corpus_rouge: no sentences");
  RougeResult r;
  r.sentences = static_cast<int64_t>(hypotheses.size());
  const double share = 1.0 / static_cast<double>(hypotheses.size());
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    const std::vector<std::string> hyp = rouge_tokens(hypotheses[i]), ref = rouge_tokens(references[i]);
    const RougeScore sentence[3] = {rouge_n(hyp, ref, 1), rouge_n(hyp, ref, 2), rouge_l(hyp, ref)};
    for (size_t k = 0; k < 3; ++k) {
      r.scores[k].precision += share * sentence[k].precision;
      r.scores[k].recall += share * sentence[k].recall;
      r.scores[k].f1 += share * sentence[k].f1;
    }
  }
  return r;
}

std::string RougeResult::to_string() const {
  return fmt::format("ROUGE-1/2/L F1 = {:.2f}/{:.2f}/{:.2f} ({} sentence{}, no stemming)", 100 * scores[0].f1,
                     100 * scores[1].f1, 100 * scores[2].f1, sentences, sentences == 1 ? "" : "s");
}

std::string RougeResult::to_json() const {
  nlohmann::json j = {{"sentences", sentences}, {"stemming", false}};
  for (size_t k = 0; k < 3; ++k)
    j[kRougeNames[k]] = {
        {"precision", 100 * scores[k].precision}, {"recall", 100 * scores[k].recall}, {"f1", 100 * scores[k].f1}};
  return json_text(j);
}

}  // namespace attn::data
