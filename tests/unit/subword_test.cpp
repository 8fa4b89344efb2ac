// SentencePiece wrapper: training on a few hundred Multi30k lines, attn's special ids,
// encode/decode round trips, the serialized model, and the error paths.
#include "attn/data/subword.h"

#include <gtest/gtest.h>
#include <sentencepiece_trainer.h>
#include <unistd.h>

#include <filesystem>
#include <unordered_map>
#include <fstream>

#include "attn/data/tasks.h"
#include "attn/data/text.h"
#include "attn/error.h"
#include "test_support.h"

namespace attn::data {
namespace {

namespace fs = std::filesystem;

const char* kTrainDe = "multi30k/raw/train.de.gz";
const char* kTrainEn = "multi30k/raw/train.en.gz";

// Collapses runs of spaces and trims: what SentencePiece's default normalisation does to
// whitespace (a decoded line equals the input up to this).
std::string squeeze_spaces(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out.push_back(c);
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// One tiny shared model: 150 German + 150 English training lines, V = 200.
class SubwordTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!attn::testing::data_file_exists(kTrainDe) || !attn::testing::data_file_exists(kTrainEn)) return;
    dir_ = fs::temp_directory_path() / ("attn_subword_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const auto de = read_lines(attn::testing::data_dir() + "/" + kTrainDe);
    const auto en = read_lines(attn::testing::data_dir() + "/" + kTrainEn);
    lines_ = std::vector<std::string>(de.begin(), de.begin() + 150);
    lines_.insert(lines_.end(), en.begin(), en.begin() + 150);
    held_out_ = {de[1000], en[1000], de[2000], en[2000]};
    SubwordTrainOptions options;
    options.vocab_size = 200;
    ::testing::internal::CaptureStderr();
    train_subword_model(lines_, (dir_ / "tiny").string(), options);
    stderr_ = ::testing::internal::GetCapturedStderr();
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  void SetUp() override {
    ATTN_SKIP_WITHOUT_DATA(kTrainDe);
    ATTN_SKIP_WITHOUT_DATA(kTrainEn);
  }
  static std::string model_path() { return (dir_ / "tiny.model").string(); }

  static inline fs::path dir_;
  static inline std::vector<std::string> lines_;
  static inline std::vector<std::string> held_out_;
  static inline std::string stderr_;
};

TEST_F(SubwordTest, TrainsQuietlyAndWritesModelAndVocab) {
  EXPECT_TRUE(fs::is_regular_file(dir_ / "tiny.model"));
  EXPECT_TRUE(fs::is_regular_file(dir_ / "tiny.vocab"));
  EXPECT_EQ(stderr_, "") << "SentencePiece logged during training";
  const auto vocab = read_lines((dir_ / "tiny.vocab").string());
  ASSERT_EQ(vocab.size(), 200u);
  EXPECT_EQ(vocab[0].substr(0, vocab[0].find('\t')), "<pad>");
  EXPECT_EQ(vocab[3].substr(0, vocab[3].find('\t')), "<unk>");
}

TEST_F(SubwordTest, SpecialIdsFollowSeq2SeqConventions) {
  const auto model = SubwordModel::load(model_path());
  EXPECT_FALSE(model.empty());
  EXPECT_EQ(model.vocab_size(), 200);
  EXPECT_EQ(model.path(), model_path());
  EXPECT_EQ(model.pieces({kPad, kBos, kEos, kSubwordUnk}),
            (std::vector<std::string>{"<pad>", "<s>", "</s>", "<unk>"}));
  // Encoded text never holds PAD/BOS/EOS, and (coverage 1.0) no UNK for training text.
  for (const auto& line : lines_) {
    for (const int32_t id : model.encode(line)) {
      ASSERT_GE(id, 4) << "in '" << line << "'";
      ASSERT_LT(id, 200);
    }
  }
  // A character never seen in training is UNK.
  const auto ids = model.encode("Zwei \u4e2d");
  EXPECT_NE(std::find(ids.begin(), ids.end(), kSubwordUnk), ids.end());
}

TEST_F(SubwordTest, EncodeDecodeRoundTrip) {
  const auto model = SubwordModel::load(model_path());
  std::vector<std::string> texts = lines_;
  texts.insert(texts.end(), held_out_.begin(), held_out_.end());
  int exact = 0;
  for (const auto& text : texts) {
    const auto ids = model.encode(text);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(model.decode(ids), squeeze_spaces(text));
    exact += model.decode(ids) == text;
  }
  EXPECT_GT(exact, static_cast<int>(texts.size()) * 9 / 10);  // most lines have single spaces already
  EXPECT_TRUE(model.encode("").empty());
  EXPECT_EQ(model.decode({}), "");
}

TEST_F(SubwordTest, DecodeSkipsPadBosAndStopsAtEos) {
  const auto model = SubwordModel::load(model_path());
  const std::string text = "Zwei junge Männer";
  const auto ids = model.encode(text);
  std::vector<int32_t> framed = {kBos};
  framed.insert(framed.end(), ids.begin(), ids.end());
  framed.push_back(kEos);
  framed.push_back(ids[0]);  // after EOS: ignored
  framed.push_back(kPad);
  EXPECT_EQ(model.decode(framed), text);
  std::vector<int32_t> padded = ids;
  padded.insert(padded.begin() + 1, kPad);
  padded.push_back(kPad);
  EXPECT_EQ(model.decode(padded), text);
  EXPECT_EQ(model.decode({kEos, ids[0]}), "");
}

TEST_F(SubwordTest, Pieces) {
  const auto model = SubwordModel::load(model_path());
  const auto pieces = model.encode_pieces("Zwei Männer");
  ASSERT_FALSE(pieces.empty());
  EXPECT_EQ(pieces[0].rfind("\u2581", 0), 0u) << pieces[0];  // word start "▁"
  EXPECT_EQ(pieces, model.pieces(model.encode("Zwei Männer")));
  std::string joined;
  for (const auto& p : pieces) joined += p;
  EXPECT_EQ(joined, "\u2581Zwei\u2581Männer");
  EXPECT_EQ(model.decode_pieces(pieces), "Zwei Männer");
}

TEST_F(SubwordTest, IdsOutsideVocabularyAreErrors) {
  const auto model = SubwordModel::load(model_path());
  EXPECT_THROW_MSG(model.decode({5, 200}), ValueError, "id 200 outside the vocabulary [0, 200)");
  EXPECT_THROW_MSG(model.decode({-1}), ValueError, "id -1 outside");
  EXPECT_THROW_MSG(model.pieces({7, 999}), ValueError, "id 999 outside");
}

TEST_F(SubwordTest, SerializedRoundTrip) {
  const auto model = SubwordModel::load(model_path());
  const std::string bytes = model.serialized();
  std::ifstream in(model_path(), std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(bytes, file);  // the proto bytes are the .model file
  const auto copy = SubwordModel::from_serialized(bytes, "checkpoint:src_spm");
  EXPECT_EQ(copy.path(), "checkpoint:src_spm");
  EXPECT_EQ(copy.vocab_size(), model.vocab_size());
  for (const auto& text : held_out_) {
    EXPECT_EQ(copy.encode(text), model.encode(text));
    EXPECT_EQ(copy.decode(copy.encode(text)), model.decode(model.encode(text)));
  }
  EXPECT_THROW_MSG(SubwordModel::from_serialized("not a model", "ckpt"), IoError, "'ckpt'");
}

TEST_F(SubwordTest, LoadErrors) {
  EXPECT_THROW_MSG(SubwordModel::load((dir_ / "missing.model").string()), IoError, "missing.model");
  const std::string junk = (dir_ / "junk.model").string();
  write_lines(junk, {"this is not a protobuf"});
  EXPECT_THROW_MSG(SubwordModel::load(junk), IoError, "junk.model': not a SentencePiece model file (it does not parse)");
  // A SentencePiece model with the library's default ids (unk 0, bos 1, eos 2, no pad).
  const std::string other = (dir_ / "default_ids").string();
  write_lines((dir_ / "train.txt").string(), lines_);
  const std::unordered_map<std::string, std::string> kwargs = {
      {"input", (dir_ / "train.txt").string()}, {"model_prefix", other}, {"vocab_size", "100"}, {"minloglevel", "2"}};
  ::testing::internal::CaptureStderr();
  const auto status = sentencepiece::SentencePieceTrainer::Train(kwargs, nullptr);
  ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_THROW_MSG(SubwordModel::load(other + ".model"), ValueError, "pad=-1 bos=1 eos=2 unk=0");
}

TEST_F(SubwordTest, TrainingOptionsAndErrors) {
  const std::string prefix = (dir_ / "err").string();
  SubwordTrainOptions options;
  options.vocab_size = 4;
  EXPECT_THROW_MSG(train_subword_model(lines_, prefix, options), ValueError, "vocab_size must be >= 5 (4 special pieces + 1), got 4");
  options.vocab_size = 100;
  options.model_type = "word";
  EXPECT_THROW_MSG(train_subword_model(lines_, prefix, options), ValueError, "unknown model_type 'word'");
  options.model_type = "bpe";
  options.character_coverage = 0.0f;
  EXPECT_THROW_MSG(train_subword_model(lines_, prefix, options), ValueError, "character_coverage");
  options.character_coverage = 1.0f;
  EXPECT_THROW_MSG(train_subword_model({"", ""}, prefix, options), ValueError, "no non-empty training line");
  EXPECT_THROW_MSG(train_subword_model(lines_, (dir_ / "no_such_dir" / "m").string(), options), IoError,
                   "no_such_dir");
  // More pieces than the text can give: SentencePiece's own message, as a ValueError.
  options.vocab_size = 50000;
  EXPECT_THROW_MSG(train_subword_model(lines_, prefix, options), ValueError, "Vocabulary size");
  EXPECT_FALSE(fs::exists(prefix + ".model"));
  for (const auto& entry : fs::directory_iterator(dir_))  // nor the temporary folder it trains in
    EXPECT_EQ(entry.path().filename().string().rfind(".attn-spm-", 0), std::string::npos) << entry.path();
  // A directory is not a prefix (it would write the hidden files dir/.model and dir/.vocab).
  EXPECT_THROW_MSG(train_subword_model(lines_, (dir_ / "").string(), options), ValueError, "names a directory");
}

TEST_F(SubwordTest, BpeAndSampledTraining) {
  SubwordTrainOptions options;
  options.vocab_size = 150;
  options.model_type = "bpe";
  options.max_sentences = 100;  // an evenly spaced sample of the 300 lines
  const std::string prefix = (dir_ / "bpe").string();
  ::testing::internal::CaptureStderr();
  train_subword_model(lines_, prefix, options);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  const auto model = SubwordModel::load(prefix + ".model");
  EXPECT_EQ(model.vocab_size(), 150);
  EXPECT_EQ(model.pieces({0, 1, 2, 3}), (std::vector<std::string>{"<pad>", "<s>", "</s>", "<unk>"}));
  for (const auto& text : held_out_) EXPECT_EQ(model.decode(model.encode(text)), squeeze_spaces(text));
  // Same data and options: the same pieces and scores (the .model bytes differ: they record
  // the model_prefix).
  const std::string again = (dir_ / "bpe2").string();
  train_subword_model(lines_, again, options);
  EXPECT_TRUE(read_lines(again + ".vocab") == read_lines(prefix + ".vocab"));
}

TEST(Subword, EmptyModelIsAnErrorNotACrash) {
  SubwordModel model;
  EXPECT_TRUE(model.empty());
  EXPECT_THROW_MSG(model.encode("Zwei"), ValueError, "no model loaded");
  EXPECT_THROW_MSG(model.decode({5}), ValueError, "no model loaded");
  EXPECT_THROW_MSG(model.vocab_size(), ValueError, "no model loaded");
  EXPECT_THROW_MSG(model.serialized(), ValueError, "no model loaded");
}

}  // namespace
}  // namespace attn::data
