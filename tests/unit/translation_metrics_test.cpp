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

TEST(TranslationMetrics, SourceLengthBucketsAreInclusiveRanges) {
  EXPECT_EQ(source_length_bucket(0), 0u);  // an empty source counts in 1-5
  EXPECT_EQ(source_length_bucket(1), 0u);
  EXPECT_EQ(source_length_bucket(5), 0u);
  EXPECT_EQ(source_length_bucket(6), 1u);
  EXPECT_EQ(source_length_bucket(30), 5u);
  EXPECT_EQ(source_length_bucket(31), 6u);
  EXPECT_EQ(source_length_bucket(500), 6u);
  EXPECT_EQ(source_length_bucket(3, {2, 4}), 1u);
  EXPECT_THROW_MSG(source_length_bucket(3, {}), ValueError, "must start at 1 or more");
  EXPECT_THROW_MSG(source_length_bucket(3, {0, 4}), ValueError, "must start at 1 or more");
  EXPECT_THROW_MSG(source_length_bucket(3, {4, 4}), ValueError, "must increase, got 4 after 4");
}

TEST(TranslationMetrics, BleuBySourceLengthScoresEachBucketOnItsOwn) {
  // Sources of 2, 7 (tabs, runs of spaces and no-break spaces separate), 3 and 32 words; no source of
  // 11-30 words. Buckets 1-5 and 6-10 are scored on their own sentences only.
  std::string source32;
  for (int k = 0; k < 32; ++k) source32 += "w" + std::to_string(k) + " ";
  const std::vector<std::string> sources = {"le chat", "un  homme\tmange une pomme\u202frouge\u00a0ici",
                                            "il pleut fort", source32};
  const std::vector<std::string> hyps = {"the cat sleeps", "a man eats a red apple here", "it rains", "x y z"};
  const std::vector<std::string> refs = {"the cat sleeps", "a man eats a red apple", "it is raining hard", "a b c"};
  const std::vector<LengthBucket> b = bleu_by_source_length(sources, hyps, refs);
  ASSERT_EQ(b.size(), 7u);
  const char* labels[] = {"1-5", "6-10", "11-15", "16-20", "21-25", "26-30", "31+"};
  const int64_t counts[] = {2, 1, 0, 0, 0, 0, 1};
  for (size_t i = 0; i < b.size(); ++i) {
    EXPECT_EQ(b[i].label(), labels[i]);
    EXPECT_EQ(b[i].sentences, counts[i]) << labels[i];
    EXPECT_EQ(b[i].bleu.has_value(), counts[i] > 0) << labels[i];  // an empty bucket has no BLEU, never NaN
  }
  EXPECT_EQ(b[0].min_words, 1);
  EXPECT_EQ(b[0].max_words, 5);
  EXPECT_EQ(b[6].min_words, 31);
  EXPECT_EQ(b[6].max_words, 0);
  EXPECT_DOUBLE_EQ(b[0].bleu->score, corpus_bleu({hyps[0], hyps[2]}, {refs[0], refs[2]}).score);
  EXPECT_DOUBLE_EQ(b[1].bleu->score, corpus_bleu({hyps[1]}, {refs[1]}).score);
  EXPECT_GT(b[1].bleu->score, b[6].bleu->score);
  EXPECT_DOUBLE_EQ(b[6].bleu->score, 0.0);
  // Other bounds; counts that differ.
  EXPECT_EQ(bleu_by_source_length(sources, hyps, refs, {2}).size(), 2u);
  EXPECT_EQ(bleu_by_source_length(sources, hyps, refs, {2})[0].sentences, 1);
  EXPECT_THROW_MSG(bleu_by_source_length(sources, hyps, {"a"}), ValueError, "4 sources but 1 hypotheses or references");
  EXPECT_EQ(bleu_by_source_length({}, {}, {})[0].sentences, 0);
}

}  // namespace
}  // namespace attn::data
