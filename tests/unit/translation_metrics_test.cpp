// data/translation_metrics.h on hand-made examples: which words count, what a repetition is,
// and where a source token's attention stays below 0.5.
#include "attn/data/translation_metrics.h"

#include <gtest/gtest.h>

#include "attn/error.h"
#include "test_support.h"

namespace attn::data {
namespace {

TEST(TranslationMetrics, CopyAccuracyCountsSourceWordsOutsideTheTargetVocabulary) {
  const std::unordered_set<std::string> vocabulary = word_set({"a man walks .", "two dogs"});
  EXPECT_EQ(vocabulary.size(), 6u);
  // Row 0: of the words outside the vocabulary ("Ein", "Mann", "in", "Zürich", "42"), the
  // reference carries "Zürich" and "42" over: those count; the hypothesis holds "Zürich" (and
  // "Mann", which the reference translates). Row 1: "Bob" twice, both copied. Row 2: a source
  // word in the vocabulary, and one the reference does not hold: none counts.
  const CopyAccuracy acc = copy_accuracy({"Ein Mann in Zürich 42", "Bob Bob", "a Katze"},
                                         {"a man walks through Zürich at 42 .", "Bob", "a cat"},
                                         {"a Mann walks Zürich", "Bob sees Bob", "a Katze"}, vocabulary);
  EXPECT_EQ(acc.words, 4);   // Zürich, 42, Bob, Bob
  EXPECT_EQ(acc.copied, 3);  // Zürich, Bob, Bob
  EXPECT_EQ(acc.sentences, 2);
  EXPECT_DOUBLE_EQ(acc.rate(), 0.75);
  EXPECT_EQ(copy_accuracy({"a"}, {"a"}, {"a"}, vocabulary).rate(), 0.0);  // nothing to copy: 0, not NaN
  EXPECT_THROW_MSG(copy_accuracy({"a"}, {"a"}, {}, vocabulary), ValueError,
                   "copy_accuracy: 1 sources but 0 hypotheses or references");
}

TEST(TranslationMetrics, RepetitionRateNeedsARepeatedNgramTheSourceLacks) {
  const std::vector<std::string> sources = {"x y", "the cat the cat", "p q", "p q"};
  const std::vector<std::string> hypotheses = {
      "a dog runs a dog runs",  // "a dog" twice: repeated
      "the cat the cat",        // repeated, but the source holds "the cat": not counted
      "a b a c",                // only the unigram "a" repeats: not counted (n >= 2)
      ""};
  EXPECT_DOUBLE_EQ(repetition_rate(sources, hypotheses), 0.25);
  EXPECT_DOUBLE_EQ(repetition_rate(sources, hypotheses, 1, 1), 0.5);   // "a" twice in rows 0 and 2
  EXPECT_DOUBLE_EQ(repetition_rate(sources, hypotheses, 3, 4), 0.25);  // "a dog runs"
  EXPECT_DOUBLE_EQ(repetition_rate({}, {}), 0.0);
  EXPECT_THROW_MSG(repetition_rate(sources, hypotheses, 3, 2), ValueError, "must satisfy 1 <= min <= max");
}

TEST(TranslationMetrics, UnderTranslationSumsAttentionOverSteps) {
  // Sentence 0: 3 source tokens over 2 steps, column sums 1.2, 0.45, 0.35 → two under 0.5.
  // Sentence 1: no steps (no attention): skipped. Sentence 2: one token, sum 1.
  const UnderTranslation u = under_translation({{{0.6f, 0.2f, 0.2f}, {0.6f, 0.25f, 0.15f}}, {}, {{1.0f}}});
  EXPECT_EQ(u.tokens, 4);
  EXPECT_EQ(u.under, 2);
  EXPECT_DOUBLE_EQ(u.rate(), 0.5);
  EXPECT_EQ(under_translation({{{0.5f}}}).under, 0);  // exactly 0.5 is not below it
  EXPECT_EQ(under_translation({}).rate(), 0.0);
  EXPECT_THROW_MSG(under_translation({{{1.0f, 0.0f}, {1.0f}}}), ValueError, "sentence 0 step 1 has 1 weights");
}

}  // namespace
}  // namespace attn::data
