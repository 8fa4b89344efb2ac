// ROUGE-1/2/L as rouge-score computes them by default (no stemming). The expected values are
// worked out by hand from the counts written next to them; tests/parity/test_rouge.py checks
// the same code against rouge-score itself.
#include "attn/data/rouge.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "attn/error.h"

namespace attn::data {
namespace {

constexpr double kTol = 1e-12;

using Tokens = std::vector<std::string>;

void expect_score(const RougeScore& s, double precision, double recall, double f1) {
  EXPECT_NEAR(s.precision, precision, kTol);
  EXPECT_NEAR(s.recall, recall, kTol);
  EXPECT_NEAR(s.f1, f1, kTol);
}

TEST(RougeTokens, LowercaseAsciiAlphanumericRuns) {
  EXPECT_EQ(rouge_tokens("The cat's 2 HATS!"), (Tokens{"the", "cat", "s", "2", "hats"}));
  // Letters outside [a-z0-9] after lowercasing are separators, as in rouge-score.
  EXPECT_EQ(rouge_tokens("naïve Ünïcode"), (Tokens{"na", "ve", "n", "code"}));
  // Python's str.lower(): 'İ' -> 'i' + U+0307, whose 'i' stays.
  EXPECT_EQ(rouge_tokens("İstanbul"), (Tokens{"i", "stanbul"}));
  EXPECT_EQ(rouge_tokens("  --  "), Tokens{});
  EXPECT_EQ(rouge_tokens(""), Tokens{});
}

TEST(Rouge, HandComputedSentence) {
  const Tokens ref = rouge_tokens("The cat sat on the mat.");  // the cat sat on the mat
  const Tokens hyp = rouge_tokens("the cat was on the mat");
  // Unigrams: the x2, cat, on, mat match (5 of 6 on each side).
  expect_score(rouge_n(hyp, ref, 1), 5.0 / 6, 5.0 / 6, 5.0 / 6);
  // Bigrams: "the cat", "on the", "the mat" match (3 of 5 on each side).
  expect_score(rouge_n(hyp, ref, 2), 3.0 / 5, 3.0 / 5, 3.0 / 5);
  // LCS "the cat on the mat": 5.
  expect_score(rouge_l(hyp, ref), 5.0 / 6, 5.0 / 6, 5.0 / 6);
}

TEST(Rouge, ClippedCountsAndUnequalLengths) {
  const Tokens hyp = {"the", "cat", "the", "cat"}, ref = {"the", "cat"};
  // Unigrams: the min(2,1) + cat min(2,1) = 2; P = 2/4, R = 2/2, F = 2·0.5·1/1.5.
  expect_score(rouge_n(hyp, ref, 1), 0.5, 1.0, 2.0 / 3);
  // Bigrams: hyp "the cat" x2, "cat the"; ref "the cat": 1 match; P = 1/3, R = 1, F = 0.5.
  expect_score(rouge_n(hyp, ref, 2), 1.0 / 3, 1.0, 0.5);
  // LCS 2: P = 2/4, R = 1.
  expect_score(rouge_l(hyp, ref), 0.5, 1.0, 2.0 / 3);
}

TEST(Rouge, LinsWordOrderExample) {
  // Lin (2004), section 3.1: ROUGE-L tells "police kill the gunman" from "the gunman kill police".
  const Tokens ref = {"police", "killed", "the", "gunman"};
  expect_score(rouge_l({"police", "kill", "the", "gunman"}, ref), 0.75, 0.75, 0.75);
  expect_score(rouge_l({"the", "gunman", "kill", "police"}, ref), 0.5, 0.5, 0.5);
  // ROUGE-2 tells them apart too: "the gunman" matches in both, "police kill" in neither.
  expect_score(rouge_n({"the", "gunman", "kill", "police"}, ref, 2), 1.0 / 3, 1.0 / 3, 1.0 / 3);
}

TEST(Rouge, EmptySidesScoreZero) {
  expect_score(rouge_n({}, {"a"}, 1), 0, 0, 0);
  expect_score(rouge_n({"a"}, {}, 1), 0, 0, 0);
  expect_score(rouge_n({"a"}, {"a"}, 2), 0, 0, 0);  // no bigram on either side
  expect_score(rouge_l({}, {"a"}), 0, 0, 0);
  expect_score(rouge_l({"a"}, {}), 0, 0, 0);
  EXPECT_THROW(rouge_n({"a"}, {"a"}, 0), ValueError);
}

TEST(Rouge, CorpusIsTheMeanOfSentences) {
  const RougeResult r = corpus_rouge({"the cat was on the mat", "The gunman kill police."},
                                     {"The cat sat on the mat.", "police killed the gunman"});
  EXPECT_EQ(r.sentences, 2);
  // Sentence 2: unigrams the, gunman, police match (3 of 4); bigram "the gunman" (1 of 3);
  // LCS "the gunman" (2 of 4).
  EXPECT_NEAR(r.scores[0].f1, (5.0 / 6 + 3.0 / 4) / 2, kTol);
  EXPECT_NEAR(r.scores[1].f1, (3.0 / 5 + 1.0 / 3) / 2, kTol);
  EXPECT_NEAR(r.scores[2].f1, (5.0 / 6 + 2.0 / 4) / 2, kTol);
  EXPECT_EQ(r.to_string(), "ROUGE-1/2/L F1 = 79.17/46.67/66.67 (2 sentences, no stemming)");
  const nlohmann::json j = nlohmann::json::parse(r.to_json());
  EXPECT_NEAR(j["rouge2"]["f1"].get<double>(), 100 * (3.0 / 5 + 1.0 / 3) / 2, 1e-9);
  EXPECT_EQ(j["stemming"], false);
  EXPECT_THROW(corpus_rouge({"a"}, {}), ValueError);
  EXPECT_THROW(corpus_rouge({}, {}), ValueError);
}

}  // namespace
}  // namespace attn::data
