#include "attn/data/tatoeba.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "attn/data/parallel.h"
#include "attn/data/translation_metrics.h"
#include "attn/error.h"
#include "test_support.h"

namespace attn::data {
namespace {

namespace fs = std::filesystem;

// 302 lines, 300 distinct pairs: 200 French sentences, those of k < 100 translated twice (two
// English wordings, the second line with an attribution field), and two exact duplicate lines.
std::string generated_file() {
  std::string text;
  for (int k = 0; k < 200; ++k)
    text += "I have " + std::to_string(k) + " cats.\tJ'ai " + std::to_string(k) + " chats.\n";
  for (int k = 0; k < 100; ++k)
    text += "I own " + std::to_string(k) + " cats.\tJ'ai " + std::to_string(k) + " chats.\tCC-BY 2.0\n";
  text += "I have 7 cats.\tJ'ai 7 chats.\nI have 8 cats.\tJ'ai 8 chats.\n";
  return text;
}

class Tatoeba : public testing::TempDirTest {};

TEST_F(Tatoeba, ReadsTwoAndThreeFieldLines) {
  put(path("fra.txt.gz"), "Go.\tVa !\nHi.\tSalut !\tCC-BY 2.0 (France) Attribution: tatoeba.org\n");
  const std::vector<TatoebaPair> pairs = read_tatoeba(path("fra.txt.gz"));
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].english, "Go.");
  EXPECT_EQ(pairs[0].french, "Va !");
  EXPECT_EQ(pairs[1].english, "Hi.");
  EXPECT_EQ(pairs[1].french, "Salut !");
}

TEST_F(Tatoeba, BadLinesNameTheirNumber) {
  const std::string file = path("fra.txt.gz");
  put(file, "Go.\tVa !\nno tab here\n");
  EXPECT_THROW_MSG(read_tatoeba(file), ValueError, file + ":2: no tab");
  put(file, "Go.\tVa !\nHi.\tSalut !\n\tCourez !\n");
  EXPECT_THROW_MSG(read_tatoeba(file), ValueError, file + ":3: an empty English sentence");
  put(file, "Run!\t\n");
  EXPECT_THROW_MSG(read_tatoeba(file), ValueError, file + ":1: an empty French sentence");
  put(file, "Go.\tVa !\nHi.\tSalut !\tCC\tmore\n");
  EXPECT_THROW_MSG(read_tatoeba(file), ValueError, file + ":2: more than three fields");
  put(file, "Go.\tVa !\n\n");
  EXPECT_THROW_MSG(read_tatoeba(file), ValueError, file + ":2: no tab");
  EXPECT_THROW_MSG(read_tatoeba(path("none.gz")), IoError, "none.gz");
  EXPECT_THROW_MSG(require_tatoeba_file(path("empty")), IoError, "fra.txt.gz: no such file");
}

TEST(TatoebaSplitTest, IsAFixedFunctionOfTheSourceWithTwoPercentShares) {
  // FNV-1a 64 of "" is the offset basis 14695981039346656037, which is 37 mod 100: train.
  EXPECT_EQ(tatoeba_split(""), TatoebaSplit::train);
  int counts[3] = {0, 0, 0};
  for (int k = 0; k < 20000; ++k) {
    const std::string s = "Phrase " + std::to_string(k);
    EXPECT_EQ(tatoeba_split(s), tatoeba_split(std::string(s)));
    ++counts[static_cast<int>(tatoeba_split(s))];
  }
  // 2 % each of 20,000: 400 expected, sd 20.
  EXPECT_NEAR(counts[1], 400, 80);
  EXPECT_NEAR(counts[2], 400, 80);
}

TEST_F(Tatoeba, SplitsAreDisjointCompleteAndKeepASourceTogether) {
  put(path("fra.txt.gz"), generated_file());
  std::set<std::pair<std::string, std::string>> all;
  std::map<std::string, std::string> split_of_source;
  size_t total = 0;
  for (const char* split : {"train", "dev", "test"}) {
    ParallelCorpus c;
    try {
      c = load_tatoeba(path("fra.txt.gz"), split, "fr", "en");
    } catch (const ValueError& e) {  // a split the 100 French sentences may leave empty
      EXPECT_NE(std::string(e.what()).find("no pairs in the"), std::string::npos) << e.what();
      continue;
    }
    ASSERT_EQ(c.src.size(), c.tgt.size());
    total += c.src.size();
    for (size_t i = 0; i < c.src.size(); ++i) {
      EXPECT_TRUE(all.insert({c.src[i], c.tgt[i]}).second) << "pair in two splits or twice: " << c.src[i];
      EXPECT_EQ(c.src[i].rfind("J'ai ", 0), 0u) << "source is not French: " << c.src[i];
      const auto [it, added] = split_of_source.emplace(c.src[i], split);
      EXPECT_EQ(it->second, split) << "source '" << c.src[i] << "' in " << it->second << " and " << split;
      EXPECT_EQ(tatoeba_split(c.src[i]), split == std::string("train") ? TatoebaSplit::train
                                         : split == std::string("dev") ? TatoebaSplit::dev
                                                                       : TatoebaSplit::test);
    }
  }
  EXPECT_EQ(total, 300u);  // 302 lines, the 2 exact duplicates left out
  // The same again: deterministic; "val" is dev; a limit L spreads over the N pairs: i * N / L.
  const ParallelCorpus train = load_tatoeba(path("fra.txt.gz"), "train", "fr", "en");
  EXPECT_EQ(load_tatoeba(path("fra.txt.gz"), "train", "fr", "en").src, train.src);
  EXPECT_EQ(load_tatoeba(path("fra.txt.gz"), "val", "fr", "en").src,
            load_tatoeba(path("fra.txt.gz"), "dev", "fr", "en").src);
  const size_t n = train.src.size();
  const ParallelCorpus three = load_tatoeba(path("fra.txt.gz"), "train", "fr", "en", 3);
  ASSERT_EQ(three.src.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(three.src[i], train.src[i * n / 3]) << i;
    EXPECT_EQ(three.tgt[i], train.tgt[i * n / 3]) << i;
  }
  EXPECT_EQ(load_tatoeba(path("fra.txt.gz"), "train", "fr", "en", static_cast<int64_t>(n) + 5).src, train.src);
  // en-fr: the English sentences are the sources, the split follows them.
  for (const std::string& s : load_tatoeba(path("fra.txt.gz"), "train", "en", "fr").src)
    EXPECT_EQ(tatoeba_split(s), TatoebaSplit::train) << s;
}

TEST_F(Tatoeba, RefusesOtherPairsSplitsAndLimits) {
  put(path("fra.txt.gz"), generated_file());
  EXPECT_THROW_MSG(load_tatoeba(path("fra.txt.gz"), "train", "de", "en"), ValueError,
                   "Tatoeba (fra.txt.gz) has no de-en pairs (supported: fr-en, en-fr)");
  EXPECT_THROW_MSG(load_tatoeba(path("fra.txt.gz"), "test2016", "fr", "en"), ValueError,
                   "unknown Tatoeba split 'test2016' (valid: train, dev, test)");
  EXPECT_THROW_MSG(load_tatoeba(path("fra.txt.gz"), "train", "fr", "en", -1), ValueError, "limit must be >= 0");
}

TEST_F(Tatoeba, FindCorpusChoosesByFolderAndPair) {
  fs::create_directories(dir_ / "both" / "tatoeba-fra-eng");
  fs::create_directories(dir_ / "both" / "multi30k" / "raw");
  put(path("both/tatoeba-fra-eng/fra.txt.gz"), generated_file());
  const std::string both = path("both"), tatoeba = path("both/tatoeba-fra-eng"), multi30k = path("both/multi30k");
  EXPECT_EQ(find_corpus(both, "fr", "en").corpus, Corpus::tatoeba);
  EXPECT_EQ(find_corpus(both, "fr", "en").dir, tatoeba);
  EXPECT_EQ(find_corpus(both, "en", "fr").corpus, Corpus::tatoeba);
  EXPECT_EQ(find_corpus(both, "de", "en").corpus, Corpus::multi30k);
  EXPECT_EQ(find_corpus(both, "de", "en").dir, multi30k);
  EXPECT_EQ(find_corpus(multi30k, "fr", "en").corpus, Corpus::multi30k);  // Multi30k's French
  EXPECT_EQ(find_corpus(tatoeba, "fr", "en").dir, tatoeba);
  EXPECT_THROW_MSG(find_corpus(tatoeba, "de", "en"), ValueError, "has no de-en pairs (supported: fr-en, en-fr");
  // load_corpus takes the corpus's folder or the one holding it.
  EXPECT_EQ(load_corpus(Corpus::tatoeba, both, "train", "fr", "en").src,
            load_corpus(Corpus::tatoeba, tatoeba, "train", "fr", "en").src);
  EXPECT_EQ(parse_corpus(to_string(Corpus::tatoeba)), Corpus::tatoeba);
  EXPECT_EQ(parse_corpus(to_string(Corpus::multi30k)), Corpus::multi30k);
  EXPECT_THROW_MSG(parse_corpus("wmt"), ValueError, "unknown corpus 'wmt' (valid: multi30k, tatoeba)");
}

// The counts docs/data.md gives for ../shared/data (fr-en: the split by the French sentence).
TEST(TatoebaShared, SharedDataCounts) {
  ATTN_SKIP_WITHOUT_DATA("tatoeba-fra-eng/fra.txt.gz");
  const std::string file = testing::data_dir() + "/tatoeba-fra-eng/fra.txt.gz";
  EXPECT_EQ(read_tatoeba(file).size(), 142787u);
  const std::pair<const char*, size_t> fr_en[] = {{"train", 137137}, {"dev", 2818}, {"test", 2827}};
  for (const auto& [split, count] : fr_en) {
    const ParallelCorpus c = load_tatoeba(file, split, "fr", "en");
    EXPECT_EQ(c.src.size(), count) << split;
    EXPECT_EQ(std::set<std::string>(c.src.begin(), c.src.end()).size(), std::string(split) == "train" ? 130684u
                                                                        : std::string(split) == "dev" ? 2673u
                                                                                                      : 2710u)
        << split << ": distinct French sentences";
  }
  // The sources per length bucket (whitespace-separated words; docs/data.md): few long ones.
  const std::pair<const char*, std::vector<int64_t>> buckets[] = {{"dev", {1084, 1480, 226, 22, 3, 3, 0}},
                                                                  {"test", {1069, 1493, 241, 20, 3, 1, 0}}};
  for (const auto& [split, want] : buckets) {
    const ParallelCorpus c = load_tatoeba(file, split, "fr", "en");
    std::vector<int64_t> got;
    for (const LengthBucket& b : bleu_by_source_length(c.src, c.tgt, c.tgt)) got.push_back(b.sentences);
    EXPECT_EQ(got, want) << split;
  }
  const std::pair<const char*, size_t> en_fr[] = {{"train", 136934}, {"dev", 2984}, {"test", 2864}};
  for (const auto& [split, count] : en_fr) EXPECT_EQ(load_tatoeba(file, split, "en", "fr").src.size(), count) << split;
}

}  // namespace
}  // namespace attn::data
