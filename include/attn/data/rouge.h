#pragma once
// ROUGE-1, ROUGE-2 and ROUGE-L (Lin 2004) as Google's `rouge-score` package computes them by
// default (rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"]), use_stemmer=False: no
// stemming): text lowercased (Python's str.lower()), every run of characters outside [a-z0-9]
// a separator (so letters outside ASCII drop out, as they do there), ROUGE-N from clipped
// n-gram counts, ROUGE-L from the longest common subsequence of the whole text (rougeL, not
// the per-line rougeLsum). A corpus score is the mean of the sentence scores, as
// rouge-score's aggregators' mean and as the summarisation papers report it.
// tests/parity/test_rouge.py checks it against rouge-score 0.1.2 itself.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace attn::data {

// rouge-score's tokens of `text`: "The cat's 2 hats!" -> {"the", "cat", "s", "2", "hats"}.
std::vector<std::string> rouge_tokens(const std::string& text);

struct RougeScore {
  double precision = 0.0, recall = 0.0, f1 = 0.0;  // 0..1
};

// ROUGE-N of one hypothesis against its reference: matches = Σ_g min(count_hyp(g),
// count_ref(g)) over n-grams g; precision = matches / max(hyp n-grams, 1), recall = matches /
// max(ref n-grams, 1), F1 = 2PR / (P + R) (0 when P + R = 0). ValueError when n < 1.
RougeScore rouge_n(const std::vector<std::string>& hypothesis, const std::vector<std::string>& reference, int n);
// ROUGE-L: lcs = the longest common subsequence's length; precision = lcs / |hyp|, recall =
// lcs / |ref|; all 0 when either side is empty.
RougeScore rouge_l(const std::vector<std::string>& hypothesis, const std::vector<std::string>& reference);

struct RougeResult {
  std::array<RougeScore, 3> scores{};  // ROUGE-1, ROUGE-2, ROUGE-L, each the mean over the sentences
  int64_t sentences = 0;

  // "ROUGE-1/2/L F1 = 83.33/60.00/83.33 (1 sentence, no stemming)": F1 x 100.
  std::string to_string() const;
  // {"rouge1": {"precision", "recall", "f1"}, "rouge2": ..., "rougeL": ..., "sentences",
  //  "stemming": false}: values 0..100.
  std::string to_json() const;
};

// The mean sentence ROUGE-1/2/L of hypotheses[i] against references[i]. ValueError when the
// counts differ or there are no sentences.
RougeResult corpus_rouge(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references);

}  // namespace attn::data
