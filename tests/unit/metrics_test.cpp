#include "attn/data/metrics.h"

#include <gtest/gtest.h>

#include "attn/data/tasks.h"
#include "test_support.h"

namespace attn::data {
namespace {

Tensor ids(const std::vector<int32_t>& values, const Shape& shape) { return Tensor::from_vector(values, shape); }

TEST(Metrics, ExactAndPartialMatches) {
  // Targets: "5 6 7 EOS", "8 EOS PAD PAD".
  const Tensor tgt_out = ids({5, 6, 7, 2, 8, 2, 0, 0}, Shape{2, 4});
  const Tensor lengths = ids({4, 2}, Shape{2});
  // Row 0 right; row 1 misses EOS (predicts 9).
  const Tensor pred = ids({5, 6, 7, 2, 8, 9, 0, 0}, Shape{2, 4});
  const AccuracyCounts c = score_predictions(pred, tgt_out, lengths);
  EXPECT_EQ(c.tokens_total, 6);
  EXPECT_EQ(c.tokens_correct, 5);
  EXPECT_EQ(c.sequences_total, 2);
  EXPECT_EQ(c.sequences_correct, 1);
  EXPECT_DOUBLE_EQ(c.token_accuracy(), 5.0 / 6.0);
  EXPECT_DOUBLE_EQ(c.sequence_accuracy(), 0.5);
}

TEST(Metrics, PaddingPositionsAreNotCounted) {
  const Tensor tgt_out = ids({8, 2, 0, 0}, Shape{1, 4});
  const Tensor lengths = ids({2}, Shape{1});
  // Garbage after the target length does not matter.
  const AccuracyCounts c = score_predictions(ids({8, 2, 17, 5}, Shape{1, 4}), tgt_out, lengths);
  EXPECT_EQ(c.tokens_total, 2);
  EXPECT_EQ(c.tokens_correct, 2);
  EXPECT_EQ(c.sequences_correct, 1);
}

TEST(Metrics, ShortPredictionCountsMissingPositionsWrong) {
  const Tensor tgt_out = ids({5, 6, 7, 2}, Shape{1, 4});
  const Tensor lengths = ids({4}, Shape{1});
  const AccuracyCounts c = score_predictions(ids({5, 6}, Shape{1, 2}), tgt_out, lengths);
  EXPECT_EQ(c.tokens_total, 4);
  EXPECT_EQ(c.tokens_correct, 2);
  EXPECT_EQ(c.sequences_correct, 0);
  // An empty prediction (T' = 0) gets nothing right.
  const AccuracyCounts e = score_predictions(Tensor::zeros(Shape{1, 0}, DType::i32), tgt_out, lengths);
  EXPECT_EQ(e.tokens_total, 4);
  EXPECT_EQ(e.tokens_correct, 0);
  EXPECT_EQ(e.sequences_correct, 0);
}

TEST(Metrics, LongPredictionIgnoresExtraPositions) {
  const Tensor tgt_out = ids({5, 6, 2}, Shape{1, 3});
  const Tensor lengths = ids({3}, Shape{1});
  const AccuracyCounts c = score_predictions(ids({5, 6, 2, 9, 9, 9, 9}, Shape{1, 7}), tgt_out, lengths);
  EXPECT_EQ(c.tokens_total, 3);
  EXPECT_EQ(c.tokens_correct, 3);
  EXPECT_EQ(c.sequences_correct, 1);
  // Running on instead of stopping: the EOS position is wrong, so the sequence is wrong.
  const AccuracyCounts d = score_predictions(ids({5, 6, 7, 2, 0}, Shape{1, 5}), tgt_out, lengths);
  EXPECT_EQ(d.tokens_correct, 2);
  EXPECT_EQ(d.sequences_correct, 0);
}

TEST(Metrics, AgreesWithBatchLayout) {
  TaskGenerator gen(TaskKind::reverse, 1, 12, 9);
  const Batch batch = gen.next(10);
  const AccuracyCounts perfect = score_predictions(batch.tgt_out, batch.tgt_out, batch.tgt_lengths);
  int64_t total = 0;
  for (int32_t L : batch.tgt_lengths.to_vector_i32()) total += L;
  EXPECT_EQ(perfect.tokens_total, total);
  EXPECT_EQ(perfect.tokens_correct, total);
  EXPECT_EQ(perfect.sequences_correct, 10);
  // Predicting the source (copy instead of reverse) is wrong for almost every row.
  const AccuracyCounts wrong = score_predictions(batch.tgt_in, batch.tgt_out, batch.tgt_lengths);
  EXPECT_EQ(wrong.sequences_correct, 0);  // tgt_in starts with BOS, never a target symbol
}

TEST(Metrics, AddAndEmpty) {
  AccuracyCounts a{3, 4, 1, 2};
  const AccuracyCounts b{5, 6, 0, 1};
  a.add(b);
  EXPECT_EQ(a.tokens_correct, 8);
  EXPECT_EQ(a.tokens_total, 10);
  EXPECT_EQ(a.sequences_correct, 1);
  EXPECT_EQ(a.sequences_total, 3);
  EXPECT_DOUBLE_EQ(a.token_accuracy(), 0.8);
  EXPECT_DOUBLE_EQ(a.sequence_accuracy(), 1.0 / 3.0);
  const AccuracyCounts empty;
  EXPECT_EQ(empty.token_accuracy(), 0.0);
  EXPECT_EQ(empty.sequence_accuracy(), 0.0);
}

TEST(Metrics, Errors) {
  const Tensor tgt_out = ids({5, 6, 2}, Shape{1, 3});
  EXPECT_THROW_MSG(score_predictions(ids({5, 6, 2}, Shape{1, 3}), tgt_out, ids({4}, Shape{1})), ValueError,
                   "score_predictions: 'tgt_lengths' value 4 at batch index 0 is out of range [0, T=3]");
  EXPECT_THROW_MSG(score_predictions(ids({5, 6, 2}, Shape{1, 3}), tgt_out, ids({-1}, Shape{1})), ValueError,
                   "'tgt_lengths' value -1 at batch index 0");
  EXPECT_THROW_MSG(score_predictions(ids({5, 6, 2, 5, 6, 2}, Shape{2, 3}), tgt_out, ids({3}, Shape{1})), ShapeError,
                   "score_predictions: 'tgt_out'");
  EXPECT_THROW_MSG(score_predictions(ids({5, 6, 2}, Shape{3}), tgt_out, ids({3}, Shape{1})), ShapeError,
                   "score_predictions: 'predicted'");
  EXPECT_THROW(score_predictions(Tensor::zeros(Shape{1, 3}), tgt_out, ids({3}, Shape{1})), ShapeError);
}

// Edit distances worked by hand.
TEST(EditDistance, HandComputed) {
  EXPECT_EQ(edit_distance({}, {}), 0);
  EXPECT_EQ(edit_distance({1, 2, 3}, {}), 3);  // three deletions
  EXPECT_EQ(edit_distance({}, {4, 5}), 2);     // two insertions
  EXPECT_EQ(edit_distance({1, 2, 3}, {1, 2, 3}), 0);
  EXPECT_EQ(edit_distance({1, 2, 3}, {1, 9, 3}), 1);  // one substitution
  EXPECT_EQ(edit_distance({1, 2, 3}, {2, 3, 4}), 2);  // delete 1, insert 4
  // kitten -> sitting: k->s, e->i, insert g.
  EXPECT_EQ(edit_distance({'k', 'i', 't', 't', 'e', 'n'}, {'s', 'i', 't', 't', 'i', 'n', 'g'}), 3);
  EXPECT_EQ(edit_distance({'s', 'i', 't', 't', 'i', 'n', 'g'}, {'k', 'i', 't', 't', 'e', 'n'}), 3);  // symmetric
}

// PER against the closest pronunciation, WER right when any pronunciation matches.
TEST(PronunciationScore, ClosestReferenceAndAnyMatch) {
  PronunciationScore s;
  // "either": refs IY1 DH ER0 (1 2 3) and AY1 DH ER0 (4 2 3); the hypothesis is the second.
  s.add({4, 2, 3}, {{1, 2, 3}, {4, 2, 3}});
  EXPECT_EQ(s.edits, 0);
  EXPECT_EQ(s.phonemes, 3);
  EXPECT_EQ(s.words_wrong, 0);
  // Refs of lengths 4 and 2; the hypothesis {5, 6, 7} is 1 from {5, 6, 7, 8} and 3 from {9, 9}.
  s.add({5, 6, 7}, {{9, 9}, {5, 6, 7, 8}});
  EXPECT_EQ(s.edits, 1);
  EXPECT_EQ(s.phonemes, 7);
  EXPECT_EQ(s.words_wrong, 1);
  // A tie: {1} is 1 from {1, 2} (an insertion) and 1 from {2} (a substitution); the shorter
  // reference, {2}, is r*.
  s.add({1}, {{1, 2}, {2}});
  EXPECT_EQ(s.edits, 2);
  EXPECT_EQ(s.phonemes, 8);
  EXPECT_EQ(s.words, 3);
  EXPECT_EQ(s.words_wrong, 2);
  EXPECT_DOUBLE_EQ(s.per(), 2.0 / 8.0);
  EXPECT_DOUBLE_EQ(s.wer(), 2.0 / 3.0);
  // An empty hypothesis: every reference phoneme is a deletion.
  PronunciationScore empty;
  empty.add({}, {{1, 2, 3}});
  EXPECT_DOUBLE_EQ(empty.per(), 1.0);
  EXPECT_DOUBLE_EQ(empty.wer(), 1.0);
  EXPECT_DOUBLE_EQ(PronunciationScore{}.per(), 0.0);
  EXPECT_THROW(empty.add({1}, {}), ValueError);
}

}  // namespace
}  // namespace attn::data
