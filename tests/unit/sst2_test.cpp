#include "attn/data/sst2.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "attn/data/text.h"
#include "attn/data/vocab.h"
#include "attn/error.h"
#include "test_support.h"

namespace attn::data {
namespace {
namespace fs = std::filesystem;

TEST(Sst2, ParsesLastTabAndStrips) {
  const std::string path = attn::testing::temp_file(
      "ok", "it 's a charming journey . \t1\nbleak\tand desperate \t0\n\n  spaced out \t 1 \n");
  const auto examples = read_sst2(path);
  ASSERT_EQ(examples.size(), 3u);
  EXPECT_EQ(examples[0].text, "it 's a charming journey .");
  EXPECT_EQ(examples[0].label, 1);
  // Split on the LAST tab: an earlier tab belongs to the text.
  EXPECT_EQ(examples[1].text, "bleak\tand desperate");
  EXPECT_EQ(examples[1].label, 0);
  EXPECT_EQ(examples[2].text, "spaced out");
  EXPECT_EQ(examples[2].label, 1);
}

// Issue 18 item 12: classify on raw text mapped every token to <unk> (the data is
// lower-cased and PTB-tokenised), and a byte-order mark became part of a training word.
TEST(Sst2, RawTextIsTokenisedLikeTheData) {
  using V = std::vector<std::string>;
  EXPECT_EQ(sst2_tokens("A gorgeous, witty, seductive movie."),
            (V{"a", "gorgeous", ",", "witty", ",", "seductive", "movie", "."}));
  EXPECT_EQ(sst2_tokens("It doesn't work; it's \"Crossroads\" (sadly)..."),
            (V{"it", "does", "n't", "work", ";", "it", "'s", "``", "crossroads", "''", "(", "sadly", ")", "..."}));
  EXPECT_EQ(sst2_tokens("\xEF\xBB\xBFGreat film\xE2\x80\x99s end!"), (V{"great", "film", "'s", "end", "!"}));
  EXPECT_EQ(sst2_tokens("the u.s. version, by Mr. R. Smith."),
            (V{"the", "u.s.", "version", ",", "by", "mr.", "r.", "smith", "."}));
  // Text already in the data's form is unchanged.
  for (const auto& e :
       std::vector<std::string>{"it 's a charming and often affecting journey .",
                                "... a mix of smiles and tears , `` crossroads '' instead provokes -- yawns ."})
    EXPECT_EQ(sst2_tokens(e), whitespace_tokens(e)) << e;
  // Every sentence of the real dev split reads as the same tokens.
  if (testing::data_file_exists("sst2/sentiment-dev"))
    for (const auto& e : read_sst2(sst2_split_path(testing::data_dir(), "dev")))
      EXPECT_EQ(sst2_tokens(e.text), whitespace_tokens(e.text)) << e.text;
  const std::string path = attn::testing::temp_file("bom", "\xEF\xBB\xBFgood film \t1\n");
  EXPECT_EQ(read_sst2(path).at(0).text, "good film");
}

TEST(Sst2, MalformedLinesNameFileAndLine) {
  const std::string no_tab = attn::testing::temp_file("no_tab", "good \t1\nno tab here 1\n");
  EXPECT_THROW_MSG(read_sst2(no_tab), ValueError, no_tab + ":2: expected '<sentence><TAB><label>', found no tab");
  const std::string bad_label = attn::testing::temp_file("bad_label", "good \t1\nbad \t2\n");
  EXPECT_THROW_MSG(read_sst2(bad_label), ValueError, bad_label + ":2: label '2' is not 0 or 1");
  const std::string word_label = attn::testing::temp_file("word_label", "good \tpositive\n");
  EXPECT_THROW_MSG(read_sst2(word_label), ValueError, ":1: label 'positive' is not 0 or 1");
  const std::string empty_text = attn::testing::temp_file("empty_text", "  \t1\n");
  EXPECT_THROW_MSG(read_sst2(empty_text), ValueError, ":1: empty sentence before the tab");
  EXPECT_THROW(read_sst2("/nonexistent/sentiment-dev"), IoError);
  const std::string blank = attn::testing::temp_file("blank", "\n  \n");
  EXPECT_THROW_MSG(read_sst2(blank), ValueError, blank + ": no examples (expected '<sentence><TAB><label>' lines)");
}

TEST(Sst2, SplitPaths) {
  const fs::path root = attn::testing::process_temp_dir() / "sst2_split";
  fs::create_directories(root / "sst2");
  EXPECT_EQ(sst2_split_path(root.string(), "train"), (root / "sst2" / "sentiment-train.gz").string());
  EXPECT_EQ(sst2_split_path(root.string(), "dev"), (root / "sst2" / "sentiment-dev").string());
  EXPECT_EQ(sst2_split_path((root / "sst2").string(), "test"), (root / "sst2" / "sentiment-test").string());
  EXPECT_THROW_MSG(sst2_split_path(root.string(), "valid"), IoError,
                   "unknown SST-2 split 'valid' (valid: train, dev, test)");
  fs::remove_all(root);
}

TEST(Sst2, RealFilesHaveThePublishedSizes) {
  ATTN_SKIP_WITHOUT_DATA("sst2/sentiment-dev");
  const auto dev = read_sst2(sst2_split_path(testing::data_dir(), "dev"));
  ASSERT_EQ(dev.size(), 872u);
  int positive = 0;
  for (const auto& e : dev) positive += e.label;
  EXPECT_EQ(positive, 444);
  EXPECT_EQ(dev[0].text, "it 's a charming and often affecting journey .");
  const auto test = read_sst2(sst2_split_path(testing::data_dir(), "test"));
  EXPECT_EQ(test.size(), 1821u);
  const auto train = read_sst2(sst2_split_path(testing::data_dir(), "train"));  // gzip
  ASSERT_EQ(train.size(), 67349u);
  EXPECT_EQ(train[0].text, "hide new secretions from the parental units");
  EXPECT_EQ(train[0].label, 0);
}

TEST(Vocab, FrequencyOrderTiesAlphabeticalMinFreqMaxSize) {
  const std::vector<std::string> texts = {"b a c", "a b  d", "a e", "c"};
  // counts: a 3, b 2, c 2, d 1, e 1
  Vocab v = Vocab::build(texts);
  EXPECT_EQ(v.tokens(), (std::vector<std::string>{"<pad>", "<unk>", "a", "b", "c", "d", "e"}));
  EXPECT_EQ(Vocab::build(texts, {.min_freq = 2}).tokens(), (std::vector<std::string>{"<pad>", "<unk>", "a", "b", "c"}));
  EXPECT_EQ(Vocab::build(texts, {.min_freq = 1, .max_size = 4}).tokens(),
            (std::vector<std::string>{"<pad>", "<unk>", "a", "b"}));
  EXPECT_EQ(v.encode("a  zz c"), (std::vector<int32_t>{2, Vocab::kUnk, 4}));
  EXPECT_TRUE(v.encode("   ").empty());
  EXPECT_EQ(v.id("<pad>"), Vocab::kPad);
  EXPECT_EQ(v.token(3), "b");
  EXPECT_THROW_MSG(v.token(7), ValueError, "vocabulary id 7 is out of range [0, 7)");
}

TEST(Vocab, JsonRoundTripAndErrors) {
  Vocab v = Vocab::build({"x y y"}, {.min_freq = 1, .max_size = 10});
  Vocab back = Vocab::from_json(nlohmann::json::parse(v.to_json().dump()));
  EXPECT_EQ(back.tokens(), v.tokens());
  EXPECT_EQ(back.options.max_size, 10);
  EXPECT_EQ(back.id("y"), 2);
  EXPECT_THROW_MSG(Vocab::from_json(nlohmann::json{{"tokens", {"a", "<unk>"}}}), ValueError,
                   "must start with \"<pad>\" (id 0) and \"<unk>\" (id 1)");
  EXPECT_THROW_MSG(Vocab::from_json(nlohmann::json{{"tokens", {"<pad>", "<unk>", "a", "a"}}}), ValueError,
                   "lists 'a' twice (ids 2 and 3)");
  EXPECT_THROW_MSG(Vocab::from_json(nlohmann::json::array()), ValueError, "expected a JSON object");
  EXPECT_THROW_MSG(Vocab::from_json(nlohmann::json{{"tokens", {"<pad>", "<unk>", 3}}}), ValueError,
                   "every token must be a string");
  EXPECT_THROW_MSG(Vocab::build({"a"}, {.min_freq = 0}), ValueError, "min_freq must be >= 1, got 0");
  EXPECT_THROW_MSG(Vocab::build({"a"}, {.min_freq = 1, .max_size = 1}), ValueError,
                   "max_size must be 0 (unlimited) or >= 2, got 1");
}

TEST(Vocab, RealTrainingSplit) {
  ATTN_SKIP_WITHOUT_DATA("sst2/sentiment-dev");
  std::vector<std::string> texts;
  for (const auto& e : read_sst2(sst2_split_path(testing::data_dir(), "train"))) texts.push_back(e.text);
  Vocab v1 = Vocab::build(texts, {.min_freq = 1});
  Vocab v2 = Vocab::build(texts, {.min_freq = 2});
  std::printf("SST-2 train vocabulary: %lld words (min_freq 1), %lld (min_freq 2)\n", static_cast<long long>(v1.size()),
              static_cast<long long>(v2.size()));
  EXPECT_GT(v1.size(), v2.size());
  EXPECT_GT(v2.size(), 5000);
  // The most frequent tokens of English movie reviews come first.
  EXPECT_TRUE(v1.token(2) == "the" || v1.token(2) == "," || v1.token(2) == "a" || v1.token(2) == ".") << v1.token(2);
}

}  // namespace
}  // namespace attn::data

namespace attn::data {
namespace {

TEST(Sst2Sentences, KeepsOnlyMaximalStringsOnceInFileOrder) {
  const std::vector<LabeledText> lines = {
      {"a gorgeous , witty movie .", 1},
      {"gorgeous", 1},
      {"witty movie", 1},
      {"a  gorgeous ,  witty", 1},  // a span, spaced differently
      {"bleak and desperate", 0},
      {"bleak", 0},
      {"a gorgeous , witty movie .", 1},
      {"gorgeous , witty movie . and", 1},  // overlaps the first but is not inside it
      {"desperate", 0}};
  const std::vector<LabeledText> s = sst2_sentences(lines);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].text, "a gorgeous , witty movie .");
  EXPECT_EQ(s[1].text, "bleak and desperate");
  EXPECT_EQ(s[1].label, 0);
  EXPECT_EQ(s[2].text, "gorgeous , witty movie . and");
}

TEST(Sst2Sentences, TokenBoundariesOnly) {
  // "ok" is inside "okay" as characters but not as a token span: both are sentences.
  const std::vector<LabeledText> s = sst2_sentences({{"it was okay", 1}, {"ok", 1}});
  EXPECT_EQ(s.size(), 2u);
}

TEST(Sst2Sentences, RealTrainingFileHas6885) {
  ATTN_SKIP_WITHOUT_DATA("sst2/sentiment-train.gz");
  const auto lines = read_sst2(sst2_split_path(attn::testing::data_dir(), "train"));
  ASSERT_EQ(lines.size(), 67349u);
  // The count docs/tasks.md documents against the original split's 6,920 sentences.
  EXPECT_EQ(sst2_sentences(lines).size(), 6885u);
}

}  // namespace
}  // namespace attn::data
