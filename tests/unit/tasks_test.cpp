#include "attn/data/tasks.h"

#include <gtest/gtest.h>

#include "attn/models/seq2seq.h"
#include "test_support.h"

namespace attn::data {
namespace {

std::vector<int32_t> row(const Tensor& t, int64_t b) {
  const auto all = t.to_vector_i32();
  const int64_t n = t.dim(1);
  return std::vector<int32_t>(all.begin() + b * n, all.begin() + (b + 1) * n);
}

TEST(Tasks, TargetsForEachTask) {
  const std::vector<int32_t> src = {5, 9, 3, 17, 4, 9};
  EXPECT_EQ(task_target(TaskKind::copy, src), (std::vector<int32_t>{5, 9, 3, 17, 4, 9}));
  EXPECT_EQ(task_target(TaskKind::reverse, src), (std::vector<int32_t>{9, 4, 17, 3, 9, 5}));
  EXPECT_EQ(task_target(TaskKind::sort, src), (std::vector<int32_t>{3, 4, 5, 9, 9, 17}));
  EXPECT_EQ(task_target(TaskKind::reverse, {31}), (std::vector<int32_t>{31}));
  EXPECT_THROW_MSG(task_target(TaskKind::copy, {5, 2, 7}), ValueError, "source symbol 2 at position 1");
  EXPECT_THROW_MSG(task_target(TaskKind::copy, {32}), ValueError, "not a content symbol (3..31)");
}

// Seq2SeqConfig's default vocabulary is the tasks' (models/ cannot include this header).
TEST(Tasks, Seq2SeqDefaultVocabularyIsTheTasks) { EXPECT_EQ(models::Seq2SeqConfig{}.vocab, kVocabSize); }

TEST(Tasks, ParseTaskNames) {
  EXPECT_EQ(parse_task("copy"), TaskKind::copy);
  EXPECT_EQ(parse_task("reverse"), TaskKind::reverse);
  EXPECT_EQ(parse_task("sort"), TaskKind::sort);
  EXPECT_STREQ(task_name(TaskKind::sort), "sort");
  EXPECT_THROW_MSG(parse_task("foo"), ValueError, "unknown task 'foo' (valid: copy, reverse, sort)");
  EXPECT_THROW_MSG(parse_task("Copy"), ValueError, "unknown task 'Copy'");
}

TEST(Tasks, BatchPaddingLayout) {
  const Batch batch = make_batch(TaskKind::reverse, {{5, 6, 7}, {8}, {9, 10}});
  EXPECT_EQ(batch.src.shape(), (Shape{3, 3}));
  EXPECT_EQ(batch.src.dtype(), DType::i32);
  EXPECT_EQ(batch.tgt_in.shape(), (Shape{3, 4}));
  EXPECT_EQ(batch.tgt_out.shape(), (Shape{3, 4}));
  EXPECT_EQ(batch.src_lengths.shape(), (Shape{3}));
  EXPECT_EQ(batch.tgt_lengths.shape(), (Shape{3}));
  EXPECT_EQ(batch.src.to_vector_i32(), (std::vector<int32_t>{5, 6, 7, 8, 0, 0, 9, 10, 0}));
  EXPECT_EQ(batch.src_lengths.to_vector_i32(), (std::vector<int32_t>{3, 1, 2}));
  EXPECT_EQ(batch.tgt_in.to_vector_i32(), (std::vector<int32_t>{1, 7, 6, 5, 1, 8, 0, 0, 1, 10, 9, 0}));
  EXPECT_EQ(batch.tgt_out.to_vector_i32(), (std::vector<int32_t>{7, 6, 5, 2, 8, 2, 0, 0, 10, 9, 2, 0}));
  EXPECT_EQ(batch.tgt_lengths.to_vector_i32(), (std::vector<int32_t>{4, 2, 3}));
  EXPECT_THROW_MSG(make_batch(TaskKind::copy, {}), ValueError, "no sources");
  EXPECT_THROW_MSG(make_batch(TaskKind::copy, {{5}, {}}), ValueError, "source 1 is empty");
}

TEST(Tasks, GeneratorBatchesAreConsistent) {
  for (TaskKind kind : {TaskKind::copy, TaskKind::reverse, TaskKind::sort}) {
    TaskGenerator gen(kind, 2, 9, 42);
    for (int iter = 0; iter < 5; ++iter) {
      const Batch batch = gen.next(16);
      const int64_t B = batch.src.dim(0), S = batch.src.dim(1), T = batch.tgt_in.dim(1);
      ASSERT_EQ(B, 16);
      const auto src_len = batch.src_lengths.to_vector_i32();
      const auto tgt_len = batch.tgt_lengths.to_vector_i32();
      int32_t longest = 0;
      for (int64_t b = 0; b < B; ++b) {
        const int32_t L = src_len[b];
        longest = std::max(longest, L);
        EXPECT_GE(L, 2);
        EXPECT_LE(L, 9);
        EXPECT_EQ(tgt_len[b], L + 1);
        const auto s = row(batch.src, b);
        const auto ti = row(batch.tgt_in, b);
        const auto to = row(batch.tgt_out, b);
        const std::vector<int32_t> source(s.begin(), s.begin() + L);
        for (int32_t id : source) {
          EXPECT_GE(id, kFirstSymbol);
          EXPECT_LT(id, kVocabSize);
        }
        for (int64_t i = L; i < S; ++i) EXPECT_EQ(s[i], kPad);
        const auto target = task_target(kind, source);
        EXPECT_EQ(ti[0], kBos);
        for (int32_t i = 0; i < L; ++i) {
          EXPECT_EQ(ti[i + 1], target[i]);
          EXPECT_EQ(to[i], target[i]);
        }
        EXPECT_EQ(to[L], kEos);
        for (int64_t i = L + 1; i < T; ++i) {
          EXPECT_EQ(ti[i], kPad);
          EXPECT_EQ(to[i], kPad);
        }
      }
      EXPECT_EQ(S, longest);
      EXPECT_EQ(T, longest + 1);
    }
  }
}

TEST(Tasks, LengthsCoverTheRangeUniformly) {
  TaskGenerator gen(TaskKind::copy, 3, 6, 7);
  std::vector<int> count(10, 0);
  for (int i = 0; i < 50; ++i) {
    for (int32_t L : gen.next(40).src_lengths.to_vector_i32()) {
      ASSERT_GE(L, 3);
      ASSERT_LE(L, 6);
      ++count[L];
    }
  }
  // 2000 draws over 4 lengths: 500 each expected; a broken range would leave one empty.
  for (int L = 3; L <= 6; ++L) {
    EXPECT_GT(count[L], 400) << "length " << L;
    EXPECT_LT(count[L], 600) << "length " << L;
  }
  // Symbols: all 29 appear.
  std::vector<int> seen(kVocabSize, 0);
  for (int32_t id : gen.fixed_length(64, 20).src.to_vector_i32()) ++seen[id];
  for (int32_t id = 0; id < kFirstSymbol; ++id) EXPECT_EQ(seen[id], 0) << id;
  for (int32_t id = kFirstSymbol; id < kVocabSize; ++id) EXPECT_GT(seen[id], 0) << id;
}

TEST(Tasks, SameSeedSameBatches) {
  TaskGenerator a(TaskKind::sort, 1, 30, 123);
  TaskGenerator b(TaskKind::sort, 1, 30, 123);
  TaskGenerator c(TaskKind::sort, 1, 30, 124);
  bool differs = false;
  for (int i = 0; i < 4; ++i) {
    const Batch x = a.next(8), y = b.next(8), z = c.next(8);
    EXPECT_EQ(x.src.shape(), y.src.shape());
    EXPECT_EQ(x.src.to_vector_i32(), y.src.to_vector_i32());
    EXPECT_EQ(x.tgt_in.to_vector_i32(), y.tgt_in.to_vector_i32());
    EXPECT_EQ(x.tgt_out.to_vector_i32(), y.tgt_out.to_vector_i32());
    EXPECT_EQ(x.src_lengths.to_vector_i32(), y.src_lengths.to_vector_i32());
    if (x.src.shape() != z.src.shape() || x.src.to_vector_i32() != z.src.to_vector_i32()) differs = true;
  }
  EXPECT_TRUE(differs) << "seeds 123 and 124 gave identical batches";
  // The stream itself is pinned: a change to the generator would silently change every
  // experiment, so the first source of seed 1 is fixed here.
  TaskGenerator pinned(TaskKind::copy, 5, 5, 1);
  EXPECT_EQ(pinned.fixed_length(1, 5).src.to_vector_i32(), (std::vector<int32_t>{17, 31, 11, 4, 5}));
}

TEST(Tasks, FixedLength) {
  TaskGenerator gen(TaskKind::reverse, 5, 10, 3);
  const Batch batch = gen.fixed_length(4, 80);  // outside the training range is allowed
  EXPECT_EQ(batch.src.shape(), (Shape{4, 80}));
  EXPECT_EQ(batch.tgt_out.shape(), (Shape{4, 81}));
  for (int32_t L : batch.src_lengths.to_vector_i32()) EXPECT_EQ(L, 80);
  for (int32_t L : batch.tgt_lengths.to_vector_i32()) EXPECT_EQ(L, 81);
  for (int32_t id : batch.src.to_vector_i32()) EXPECT_NE(id, kPad);
  EXPECT_THROW_MSG(gen.fixed_length(4, 0), ValueError, "sequence length 0 must be at least 1");
  EXPECT_THROW_MSG(gen.fixed_length(0, 5), ValueError, "batch size 0 must be at least 1");
  EXPECT_THROW_MSG(gen.next(-1), ValueError, "batch size -1 must be at least 1");
}

TEST(Tasks, GeneratorRejectsBadRanges) {
  EXPECT_THROW_MSG(TaskGenerator(TaskKind::copy, 10, 5, 1), ValueError, "min length 10 is greater than max length 5");
  EXPECT_THROW_MSG(TaskGenerator(TaskKind::copy, 0, 5, 1), ValueError, "min length 0 must be at least 1");
  EXPECT_NO_THROW(TaskGenerator(TaskKind::copy, 4, 4, 1));
}

TEST(Tasks, SymbolsRoundTrip) {
  EXPECT_EQ(parse_symbols("5 9 3 17 4"), (std::vector<int32_t>{5, 9, 3, 17, 4}));
  EXPECT_EQ(parse_symbols("  31,3\t7\n"), (std::vector<int32_t>{31, 3, 7}));
  EXPECT_EQ(symbols_to_string({5, 9, 3}), "5 9 3");
  EXPECT_EQ(symbols_to_string({1, 5, 2, 0}), "<bos> 5 <eos> <pad>");
  EXPECT_EQ(symbols_to_string({}), "");
  EXPECT_EQ(symbol_name(40), "<?40>");
  const std::vector<int32_t> ids = {3, 12, 31};
  EXPECT_EQ(parse_symbols(symbols_to_string(ids)), ids);
}

TEST(Tasks, ParseSymbolsNamesEveryBadToken) {
  EXPECT_THROW_MSG(parse_symbols("5 40 x 2 7"), ValueError,
                   "symbols outside the vocabulary (valid: 3..31): '40', 'x', '2'");
  EXPECT_THROW_MSG(parse_symbols("5 1.5"), ValueError, "'1.5'");
  EXPECT_THROW_MSG(parse_symbols("-3"), ValueError, "'-3'");
  EXPECT_THROW_MSG(parse_symbols("99999999999999"), ValueError, "'99999999999999'");
  EXPECT_THROW_MSG(parse_symbols("   "), ValueError, "no symbols");
}

}  // namespace
}  // namespace attn::data
