// Parallel corpora: loading Multi30k splits and aliases, errors, subword encoding with
// truncation, the batch layout, token-budget batching and evaluation batches.
#include "attn/data/parallel.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "attn/data/text.h"
#include "attn/error.h"
#include "attn/random.h"
#include "test_support.h"

namespace attn::data {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMulti30kVal = "multi30k/raw/val.de.gz";
std::string multi30k() { return attn::testing::data_dir() + "/multi30k"; }

std::vector<int32_t> row(const Tensor& t, int64_t b) {
  const auto all = t.to_vector_i32();
  const int64_t n = t.dim(1);
  return std::vector<int32_t>(all.begin() + b * n, all.begin() + (b + 1) * n);
}

class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() / ("attn_parallel_test_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string str() const { return path_.string(); }
  fs::path path_;
};

TEST(Parallel, LoadsValAndAliases) {
  ATTN_SKIP_WITHOUT_DATA(kMulti30kVal);
  const auto val = load_parallel(multi30k(), "val", "de", "en");
  EXPECT_EQ(val.src.size(), 1014u);
  EXPECT_EQ(val.tgt.size(), 1014u);
  EXPECT_FALSE(val.src[0].empty());
  EXPECT_NE(val.src[0], val.tgt[0]);
  // The reverse direction swaps the sides.
  const auto en_de = load_parallel(multi30k(), "val", "en", "de", 5);
  ASSERT_EQ(en_de.src.size(), 5u);
  EXPECT_EQ(en_de.src[4], val.tgt[4]);
  EXPECT_EQ(en_de.tgt[4], val.src[4]);

  const auto test2016 = load_parallel(multi30k(), "test2016", "de", "en");
  EXPECT_EQ(test2016.src.size(), 1000u);
  EXPECT_EQ(load_parallel(multi30k(), "test_2016_flickr", "de", "en").src, test2016.src);
  EXPECT_EQ(load_parallel(multi30k(), "mscoco2017", "en", "fr").src.size(), 461u);
  EXPECT_EQ(load_parallel(multi30k(), "test2018", "en", "cs").src.size(), 1071u);
  EXPECT_EQ(parallel_split_file("test2017"), "test_2017_flickr");
  EXPECT_EQ(parallel_split_file("val"), "val");
  // limit takes the first lines.
  const auto head = load_parallel(multi30k(), "train", "de", "en", 3);
  ASSERT_EQ(head.src.size(), 3u);
  EXPECT_EQ(head.src[0], "Zwei junge weiße Männer sind im Freien in der Nähe vieler Büsche.");
  EXPECT_EQ(head.tgt[0], "Two young, White males are outside near many bushes.");
}

TEST(Parallel, LoadErrors) {
  ATTN_SKIP_WITHOUT_DATA(kMulti30kVal);
  // No Czech for test 2017.
  EXPECT_THROW_MSG(load_parallel(multi30k(), "test2017", "en", "cs"), IoError, "test_2017_flickr.cs.gz");
  EXPECT_THROW_MSG(load_parallel(multi30k(), "dev", "de", "en"), IoError,
                   "valid splits: train, val, test2016, test2017, test2018, mscoco2017");
  EXPECT_THROW_MSG(load_parallel(multi30k(), "val", "de", "en", -1), ValueError, "limit must be >= 0");
}

TEST(Parallel, ReadsAUsersFilesBesideRaw) {
  // --task summarize's layout: <data>/<split>.<side>, plain or .gz, when <data>/raw/ has none.
  TempDir dir;
  write_lines(dir.str() + "/train.article", {"a long article", "another one"});
  write_lines(dir.str() + "/train.summary.gz", {"short", "shorter"});
  const ParallelCorpus c = load_parallel(dir.str(), "train", "article", "summary");
  EXPECT_EQ(c.src, (std::vector<std::string>{"a long article", "another one"}));
  EXPECT_EQ(c.tgt, (std::vector<std::string>{"short", "shorter"}));
  // Multi30k's raw/ file wins over a plain file of the same split and side.
  fs::create_directories(dir.path_ / "raw");
  write_lines(dir.str() + "/raw/train.article.gz", {"raw 1", "raw 2"});
  EXPECT_EQ(load_parallel(dir.str(), "train", "article", "summary").src[0], "raw 1");
  // A missing side names both places it was looked for.
  EXPECT_THROW_MSG(load_parallel(dir.str(), "val", "article", "summary"), IoError, "/val.article, plain or .gz");
}

TEST(Parallel, MismatchedSidesAreAnError) {
  TempDir dir;
  fs::create_directories(dir.path_ / "raw");
  // read_lines reads plain text under a .gz name as well.
  write_lines(dir.str() + "/raw/x.de.gz", {"a", "b", "c"});
  write_lines(dir.str() + "/raw/x.en.gz", {"a", "b"});
  EXPECT_THROW_MSG(load_parallel(dir.str(), "x", "de", "en"), ValueError, "has 3 lines but");
  EXPECT_THROW_MSG(load_parallel(dir.str(), "x", "de", "fr"), IoError, "x.fr.gz");
  // Empty files would train or validate on nothing (BLEU of no sentences after training).
  write_lines(dir.str() + "/raw/e.de.gz", {});
  write_lines(dir.str() + "/raw/e.en.gz", {});
  EXPECT_THROW_MSG(load_parallel(dir.str(), "e", "de", "en"), ValueError, "e.de.gz' has no lines");
}

TEST(Parallel, EncodeTruncatesAndFillsEmptySides) {
  ATTN_SKIP_WITHOUT_DATA(kMulti30kVal);
  TempDir dir;
  const auto val = load_parallel(multi30k(), "val", "de", "en", 300);
  std::vector<std::string> lines = val.src;
  lines.insert(lines.end(), val.tgt.begin(), val.tgt.end());
  SubwordTrainOptions options;
  options.vocab_size = 200;
  train_subword_model(lines, dir.str() + "/m", options);
  const auto model = SubwordModel::load(dir.str() + "/m.model");

  ParallelCorpus corpus;
  corpus.src = {val.src[0], "", val.src[2]};
  corpus.tgt = {val.tgt[0], val.tgt[1], ""};
  const auto full = encode_parallel(corpus, model, model, 1000);
  EXPECT_EQ(full.truncated, 0);
  ASSERT_EQ(full.pairs.size(), 3u);
  EXPECT_EQ(full.pairs[0].src, model.encode(val.src[0]));
  EXPECT_EQ(full.pairs[0].tgt, model.encode(val.tgt[0]));
  EXPECT_EQ(full.pairs[1].src, (std::vector<int32_t>{kSubwordUnk}));
  EXPECT_EQ(full.pairs[2].tgt, (std::vector<int32_t>{kSubwordUnk}));

  const auto cut = encode_parallel(corpus, model, model, 4);
  // Pair 0 (both sides long), pair 1 (target) and pair 2 (source) are cut: 3 pairs.
  EXPECT_EQ(cut.truncated, 3);
  for (const auto& p : cut.pairs) {
    EXPECT_LE(p.src.size(), 4u);
    EXPECT_LE(p.tgt.size(), 4u);
  }
  const auto head = model.encode(val.src[0]);
  EXPECT_EQ(cut.pairs[0].src, std::vector<int32_t>(head.begin(), head.begin() + 4));

  EXPECT_THROW_MSG(encode_parallel(corpus, model, model, 0), ValueError, "max_len must be >= 1");
  corpus.tgt.pop_back();
  EXPECT_THROW_MSG(encode_parallel(corpus, model, model, 10), ValueError, "3 source lines but 2 target lines");
}

TEST(Parallel, PairBatchLayout) {
  const std::vector<EncodedPair> pairs = {{{5, 6, 7}, {8, 9}}, {{10}, {11, 12, 13, 14}}, {{15, 16}, {17}}};
  const Batch batch = make_pair_batch(pairs, {2, 0, 1});
  // B = 3, S = 3, T = 4 + 1.
  EXPECT_EQ(batch.src.shape(), (Shape{3, 3}));
  EXPECT_EQ(batch.src.dtype(), DType::i32);
  EXPECT_EQ(batch.tgt_in.shape(), (Shape{3, 5}));
  EXPECT_EQ(batch.tgt_out.shape(), (Shape{3, 5}));
  EXPECT_EQ(row(batch.src, 0), (std::vector<int32_t>{15, 16, kPad}));
  EXPECT_EQ(row(batch.src, 1), (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(row(batch.src, 2), (std::vector<int32_t>{10, kPad, kPad}));
  EXPECT_EQ(batch.src_lengths.to_vector_i32(), (std::vector<int32_t>{2, 3, 1}));
  EXPECT_EQ(row(batch.tgt_in, 0), (std::vector<int32_t>{kBos, 17, kPad, kPad, kPad}));
  EXPECT_EQ(row(batch.tgt_out, 0), (std::vector<int32_t>{17, kEos, kPad, kPad, kPad}));
  EXPECT_EQ(row(batch.tgt_in, 1), (std::vector<int32_t>{kBos, 8, 9, kPad, kPad}));
  EXPECT_EQ(row(batch.tgt_out, 1), (std::vector<int32_t>{8, 9, kEos, kPad, kPad}));
  EXPECT_EQ(row(batch.tgt_in, 2), (std::vector<int32_t>{kBos, 11, 12, 13, 14}));
  EXPECT_EQ(row(batch.tgt_out, 2), (std::vector<int32_t>{11, 12, 13, 14, kEos}));
  EXPECT_EQ(batch.tgt_lengths.to_vector_i32(), (std::vector<int32_t>{2, 3, 5}));

  EXPECT_THROW_MSG(make_pair_batch(pairs, {}), ValueError, "no indices");
  EXPECT_THROW_MSG(make_pair_batch(pairs, {0, 3}), ValueError, "index 3 outside the 3 pairs");
  EXPECT_THROW_MSG(make_pair_batch({{{}, {5}}}, {0}), ValueError, "pair 0 has an empty source");
  EXPECT_THROW_MSG(make_pair_batch({{{5}, {}}}, {0}), ValueError, "pair 0 has an empty target");
}

std::vector<EncodedPair> random_pairs(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<EncodedPair> pairs(n);
  for (auto& p : pairs) {
    p.src.assign(1 + rng.below(30), 7);
    p.tgt.assign(1 + rng.below(30), 9);
  }
  return pairs;
}

TEST(Parallel, TokenBatchesCoverEveryIndexOnceWithinBudget) {
  const auto pairs = random_pairs(2000, 11);
  const int64_t max_tokens = 400;
  const int max_sentences = 16;
  const auto batches = token_batches(pairs, max_tokens, max_sentences, 42, 0);
  std::vector<int> seen(pairs.size(), 0);
  int64_t padded = 0, real = 0;
  for (const auto& batch : batches) {
    ASSERT_FALSE(batch.empty());
    EXPECT_LE(static_cast<int>(batch.size()), max_sentences);
    size_t ms = 0, mt = 0;
    for (const size_t i : batch) {
      ASSERT_LT(i, pairs.size());
      ++seen[i];
      ms = std::max(ms, pairs[i].src.size());
      mt = std::max(mt, pairs[i].tgt.size());
      real += static_cast<int64_t>(pairs[i].src.size() + pairs[i].tgt.size() + 1);
    }
    const int64_t cost = static_cast<int64_t>(batch.size() * (ms + mt + 1));
    EXPECT_LE(cost, max_tokens);
    padded += cost;
  }
  for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "index " << i;
  // Sorting within chunks keeps padding low (random lengths 1..30 on each side).
  EXPECT_LT(static_cast<double>(padded) / static_cast<double>(real), 1.3);
  // The budget is used: batches are not needlessly small.
  EXPECT_LT(batches.size(), pairs.size() / 4);
}

TEST(Parallel, TokenBatchesDeterministicPerSeedAndEpoch) {
  const auto pairs = random_pairs(500, 3);
  const auto a = token_batches(pairs, 300, 32, 7, 1);
  EXPECT_EQ(a, token_batches(pairs, 300, 32, 7, 1));
  EXPECT_NE(a, token_batches(pairs, 300, 32, 7, 2));
  EXPECT_NE(a, token_batches(pairs, 300, 32, 8, 1));
}

TEST(Parallel, TokenBatchesEdgeCases) {
  EXPECT_TRUE(token_batches(std::vector<EncodedPair>{}, 100, 8, 1, 0).empty());
  // One pair longer than the budget forms a batch of one; the rest still fit.
  std::vector<EncodedPair> pairs = random_pairs(50, 5);
  pairs[17].src.assign(200, 7);
  const auto batches = token_batches(pairs, 100, 8, 1, 0);
  size_t count = 0;
  bool alone = false;
  for (const auto& b : batches) {
    count += b.size();
    if (std::find(b.begin(), b.end(), 17u) != b.end()) alone = b.size() == 1;
  }
  EXPECT_EQ(count, pairs.size());
  EXPECT_TRUE(alone);
  // max_sentences 1: one pair per batch.
  EXPECT_EQ(token_batches(pairs, 100000, 1, 1, 0).size(), pairs.size());
  EXPECT_THROW_MSG(token_batches(pairs, 0, 8, 1, 0), ValueError, "max_tokens must be >= 1, got 0");
  EXPECT_THROW_MSG(token_batches(pairs, 100, 0, 1, 0), ValueError, "max_sentences must be >= 1, got 0");
}

TEST(Parallel, SortedBatchesForEvaluation) {
  const std::vector<std::vector<int32_t>> sources = {{5, 5, 5}, {5}, {5, 5, 5, 5}, {5, 5}, {5}};
  const auto batches = sorted_batches(sources, 2);
  // Lengths 3 1 4 2 1 -> ascending, ties in index order: 1 4 | 3 0 | 2
  EXPECT_EQ(batches, (std::vector<std::vector<size_t>>{{1, 4}, {3, 0}, {2}}));
  EXPECT_EQ(sorted_batches(sources, 10).size(), 1u);
  EXPECT_TRUE(sorted_batches({}, 4).empty());
  EXPECT_THROW_MSG(sorted_batches(sources, 0), ValueError, "batch must be >= 1, got 0");
}

}  // namespace
}  // namespace attn::data
