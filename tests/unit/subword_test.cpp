// SentencePiece wrapper: training on a few hundred Multi30k lines, attn's special ids,
// encode/decode round trips, the serialized model, and the error paths.
#include "attn/data/subword.h"

#include <gtest/gtest.h>
#include <sentencepiece_trainer.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <unordered_map>

#include "attn/data/parallel.h"
#include "attn/data/sentencepiece_check.h"
#include "attn/data/tasks.h"
#include "attn/data/text.h"
#include "attn/decode/translate.h"
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
  EXPECT_EQ(model.pieces({kPad, kBos, kEos, kSubwordUnk}), (std::vector<std::string>{"<pad>", "<s>", "</s>", "<unk>"}));
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
  EXPECT_THROW_MSG(SubwordModel::load(junk), IoError,
                   "junk.model': not a SentencePiece model file (it does not parse)");
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
  EXPECT_THROW_MSG(train_subword_model(lines_, prefix, options), ValueError,
                   "vocab_size must be in [5, 16777216] (4 special pieces + 1 at least), got 4");
  // SentencePiece's vocab_size x 1.1 wraps in int32 from 1,952,257,862: it trained for ever.
  options.vocab_size = 2000000000;
  EXPECT_THROW_MSG(train_subword_model(lines_, prefix, options), ValueError, "got 2000000000");
  options.vocab_size = 100;
  // A line beyond SentencePiece's 4,192 bytes is skipped; none left said "no reason given".
  EXPECT_THROW_MSG(train_subword_model({std::string(2000000, 'a')}, prefix, options), ValueError,
                   "1 line is longer than 4192 bytes");
  options.model_type = "word";
  EXPECT_THROW_MSG(train_subword_model(lines_, prefix, options), ValueError, "unknown model_type 'word'");
  options.model_type = "bpe";
  options.character_coverage = 0.0f;
  EXPECT_THROW_MSG(train_subword_model(lines_, prefix, options), ValueError, "character_coverage");
  options.character_coverage = 1.0f;
  EXPECT_THROW_MSG(train_subword_model({"", ""}, prefix, options), ValueError, "no non-empty training line");
  EXPECT_THROW_MSG(train_subword_model(lines_, (dir_ / "no_such_dir" / "m").string(), options), IoError, "no_such_dir");
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

// fuzz/subword_fuzz found this model (fuzz/regressions/subword_fuzz/damaged_charsmap_segv.model):
// its denormalizer's precompiled character map holds a trie whose offsets point outside the map,
// and libsentencepiece read outside its buffer (a SEGV under AddressSanitizer) while decoding.
// check_sentencepiece_charsmaps refuses it before the library sees it.
TEST(SubwordFuzzRegression, DamagedCharacterMapIsAnIoErrorBeforeTheLibraryReadsIt) {
  static const unsigned char bytes[] = {
      0x0a, 0x0e, 0x0a, 0x05, 0x3c, 0x70, 0x61, 0x64, 0x3e, 0x15, 0x00, 0x00, 0x00, 0x00, 0x18, 0x03, 0x0a, 0x0c, 0x0a,
      0x03, 0x3c, 0x73, 0x3e, 0x15, 0x00, 0x00, 0x00, 0x00, 0x18, 0x03, 0x0a, 0x0d, 0x0a, 0x04, 0x3c, 0x2f, 0x73, 0x3e,
      0x15, 0x00, 0x00, 0x00, 0x00, 0x18, 0x03, 0x0a, 0x0e, 0x0a, 0x05, 0x3c, 0x75, 0x6e, 0x6b, 0x3e, 0x15, 0x00, 0x00,
      0x00, 0x00, 0x18, 0x02, 0x1a, 0x0a, 0x0a, 0x03, 0xe2, 0x96, 0x81, 0x15, 0x17, 0x10, 0xd6, 0xbf, 0x0a, 0x08, 0x0a,
      0x01, 0x74, 0x15, 0xe2, 0x5f, 0x45, 0xc0, 0x15, 0x2d, 0xb8, 0x21, 0xc1, 0x2a, 0x32, 0x12, 0x15, 0x00, 0x00, 0x00,
      0x00, 0x18, 0x03, 0x0a, 0x0c, 0x0a, 0x03, 0x3c, 0x73, 0x3e, 0x15, 0x00, 0x00, 0x00, 0x00, 0x18, 0x03, 0x0a, 0x0d,
      0x0a, 0x04, 0x3c, 0x50, 0x55, 0x00, 0x00, 0x80, 0x3f, 0x58, 0x00, 0x80, 0x01, 0x02, 0xc0, 0x02, 0x03, 0xc8, 0x02,
      0x01, 0xd0, 0x02, 0x02, 0xd8, 0x02, 0x00, 0x1a, 0x0a, 0x0a, 0x08, 0x69, 0x64, 0x65, 0x6e, 0x74, 0x69, 0x74, 0x79,
  };
  const std::string model(reinterpret_cast<const char*>(bytes), sizeof bytes);
  EXPECT_THROW_MSG(check_sentencepiece_charsmaps(model, "fuzz.model"), IoError,
                   "cannot load SentencePiece model 'fuzz.model': a damaged model (its denormalizer's character map");
  EXPECT_THROW_MSG(SubwordModel::from_serialized(model, "fuzz.model"), IoError, "character map");
  // Not protobuf at all, and a map shorter than its header.
  EXPECT_FALSE(check_sentencepiece_charsmaps(std::string("\x0a\x7f", 2), "x"));
  EXPECT_THROW_MSG(SubwordModel::from_serialized(std::string("\x0a\x7f", 2), "x"), IoError, "(it does not parse)");
  EXPECT_THROW_MSG(check_sentencepiece_charsmaps(std::string("\x1a\x04\x12\x02\x01\x00", 6), "x"), IoError,
                   "its normalizer's character map is shorter than its header");
}

}  // namespace
}  // namespace attn::data

// fuzz/subword_fuzz found this model (fuzz/regressions/subword_fuzz/): it parses, but an empty
// piece made SentencePiece's trie builder throw Darts::Details::Exception, which escaped
// from_serialized (the CLI printed "./third_party/darts_clone/darts.h:1143: exception: ...").
TEST(SubwordFuzzRegression, ModelWithAnEmptyPieceIsAnIoErrorNamingTheModel) {
  static const unsigned char bytes[] = {
      0x0a, 0x0e, 0x0a, 0x05, 0x3c, 0x70, 0x61, 0x64, 0x3e, 0x15, 0x00, 0x00, 0x00, 0x00, 0x18, 0x03, 0x0a, 0x0c, 0x0a,
      0x03, 0x3c, 0x73, 0x3e, 0x15, 0x00, 0x00, 0x00, 0x00, 0x18, 0x03, 0x0a, 0x0d, 0x0a, 0x04, 0x3c, 0x2f, 0x73, 0x3e,
      0x15, 0x00, 0x00, 0x00, 0x00, 0x18, 0x03, 0x0a, 0x0e, 0x0a, 0x05, 0x3c, 0x75, 0x6e, 0x6b, 0x3e, 0x15, 0x00, 0x00,
      0x00, 0x00, 0x18, 0x02, 0x0a, 0x0a, 0x0a, 0x03, 0xe2, 0x96, 0x81, 0x15, 0x17, 0x10, 0xd6, 0xbf, 0x0a, 0x08, 0x0a,
      0x01, 0x65, 0x15, 0xb8, 0x2e, 0x2c, 0xc0, 0x0a, 0x08, 0x0a, 0x01, 0x74, 0x15, 0xe2, 0x5f, 0x45, 0xc0, 0x0a, 0x08,
      0x0a, 0x01, 0x6e, 0x15, 0x65, 0x07, 0x47, 0xc0, 0x0a, 0x08, 0x0a, 0x01, 0x61, 0x15, 0x86, 0xc0, 0x4d, 0xc0, 0x0a,
      0x08, 0x0a, 0x01, 0x72, 0x15, 0xff, 0x66, 0x4e, 0xc0, 0x0a, 0x08, 0x0a, 0x01, 0x69, 0x15, 0x62, 0x79, 0x50, 0xc0,
      0x0a, 0x08, 0x0a, 0x01, 0x6d, 0x15, 0x34, 0x1c, 0x5f, 0xc0, 0x0a, 0x08, 0x0a, 0x01, 0x6c, 0x15, 0x84, 0x0c, 0x60,
      0xc0, 0x0a, 0x09, 0x0a, 0x02, 0x65, 0x6e, 0x15, 0xa1, 0x9f, 0x60, 0xc0, 0x0a, 0x08, 0x0a, 0x01, 0x73, 0x15, 0xdd,
      0xe6, 0x68, 0xc0, 0x0a, 0x08, 0x0a, 0x01, 0x75, 0x15, 0x71, 0xeb, 0x6e, 0xc0, 0x0a, 0x08, 0x0a, 0x01, 0x2e, 0x15,
      0x29, 0x00, 0x75, 0xc0, 0x0a, 0x0e, 0x0a, 0x07, 0xe2, 0x96, 0x81, 0x65, 0x69, 0x6e, 0x65, 0x15, 0xee, 0xb6, 0x75,
      0xc0, 0x0a, 0x08, 0x0a, 0x01, 0x68, 0x15, 0xe5, 0xe7, 0x7a, 0xc0, 0x0a, 0x09, 0x0a, 0x02, 0x65, 0x72, 0x15, 0xf0,
      0xfb, 0x7b, 0xc0, 0x0a, 0x08, 0x0a, 0x01, 0x64, 0x15, 0x8b, 0x6c, 0x81, 0xc0, 0x0a, 0x08, 0x0a, 0x01, 0x62, 0x15,
      0xda, 0x04, 0x83, 0xc0, 0x0a, 0x0d, 0x0a, 0x06, 0xe2, 0x96, 0x81, 0x45, 0x69, 0x6e, 0x15, 0x58, 0x7b, 0x85, 0xc0,
      0x0a, 0x08, 0x0a, 0x01, 0x6f, 0x15, 0x1d, 0xcb, 0x88, 0xc0, 0x0a, 0x09, 0x0a, 0x02, 0x63, 0x68, 0x15, 0x36, 0xc9,
      0x8b, 0xc0, 0x0a, 0x08, 0x0a, 0x01, 0x66, 0x15, 0x21, 0xa8, 0x8e, 0xc0, 0x0a, 0x08, 0x0a, 0x01, 0x67, 0x15, 0x71,
      0xaf, 0x90, 0xc0, 0x0a, 0x08, 0x0a, 0x01, 0x2c, 0x15, 0x14, 0x62, 0x91, 0xc0, 0x0a, 0x08, 0x0a, 0x01, 0x6b, 0x15,
      0xf7, 0x95, 0x91, 0xc0, 0x0a, 0x08, 0x0a, 0x01, 0x77, 0x15, 0x7e, 0x15, 0x95, 0xc0, 0x0a, 0x0c, 0x0a, 0x05, 0xe2,
      0x96, 0x81, 0x69, 0x6e, 0x15, 0xe4, 0x6d, 0x95, 0xc0, 0x0a, 0x0a, 0x0a, 0x03, 0x75, 0x6e, 0x64, 0x15, 0x2d, 0x29,
      0x96, 0xc0, 0x0a, 0x09, 0x0a, 0x02, 0xc3, 0xa4, 0x15, 0x96, 0xa2, 0x97, 0xc0, 0x0a, 0x08, 0x0a, 0x01, 0x7a, 0x15,
      0xf6, 0x42, 0x9a, 0xc0, 0x0a, 0x0d, 0x0a, 0x06, 0xe2, 0x96, 0x81, 0x61, 0x75, 0x66, 0x15, 0x17, 0x00, 0x9b, 0xc0,
      0x0a, 0x0a, 0x0a, 0x03, 0x73, 0x63, 0x68, 0x15, 0x97, 0x2b, 0x9b, 0xc0, 0x0a, 0x08, 0x0a, 0x01, 0x70, 0x15, 0x58,
      0x71, 0x9d, 0xc0, 0x0a, 0x09, 0x0a, 0x02, 0x67, 0x65, 0x15, 0x28, 0xd6, 0x9d, 0xc0, 0x0a, 0x0e, 0x0a, 0x07, 0xe2,
      0x96, 0x81, 0x4d, 0x61, 0x6e, 0x6e, 0x15, 0x83, 0x9d, 0xa2, 0xc0, 0x0a, 0x0a, 0x0a, 0x03, 0x64, 0x65, 0x72, 0x15,
      0x5a, 0xd7, 0xa2, 0xc0, 0x0a, 0x09, 0x0a, 0x02, 0x61, 0x72, 0x15, 0xfb, 0x85, 0xa3, 0xc0, 0x0a, 0x0d, 0x0a, 0x06,
      0x00, 0x96, 0x81, 0x65, 0x69, 0x6e, 0x15, 0x8a, 0xbf, 0xa3, 0xc0, 0x0a, 0x09, 0x0a, 0x02, 0xc3, 0xbc, 0x15, 0x88,
      0xe4, 0xa7, 0xc0, 0x0a, 0x0d, 0x0a, 0x06, 0xe2, 0x96, 0x81, 0x6d, 0x69, 0x74, 0x15, 0x7d, 0xf4, 0xa7, 0xc0, 0x0a,
      0x09, 0x0a, 0x02, 0x73, 0x74, 0x15, 0xb9, 0x16, 0xa9, 0xc0, 0x0a, 0x08, 0x0a, 0x01, 0x47, 0x15, 0x90, 0x28, 0xad,
      0xc0, 0x0a, 0x0a, 0x0a, 0x03, 0x64, 0x69, 0x65, 0x15, 0xa4, 0x48, 0xb0, 0xc0, 0x0a, 0x08, 0x0a, 0x01, 0x54, 0x15,
      0xec, 0xbd, 0xbe, 0xc0, 0x0a, 0x08, 0x0a, 0x01, 0x63, 0x15, 0xe4, 0xf0, 0xc3, 0xc0, 0x0a, 0x08, 0x0a, 0x01, 0x57,
      0x15, 0xf2, 0x18, 0xc8, 0xc0, 0x0a, 0x08, 0x0a, 0x01, 0x41, 0x15, 0xb4, 0x9b, 0xca, 0xc0, 0x0a, 0x08, 0x0a, 0x01,
      0x76, 0x15, 0x53, 0xdb, 0xcb, 0xc0, 0x0a, 0x08, 0x0a, 0x01, 0x2d, 0x15, 0x41, 0xe9, 0xd1, 0xc0, 0x0a, 0x09, 0x0a,
      0x02, 0xc3, 0x9f, 0x15, 0x43, 0xe9, 0xd1, 0xc0, 0x0a, 0x09, 0x0a, 0x02, 0xc3, 0xb6, 0x15, 0x48, 0xe9, 0xd1, 0xc0,
      0x0a, 0x08, 0x0a, 0x01, 0x79, 0x15, 0x6d, 0x41, 0xd9, 0xc0, 0x0a, 0x08, 0x0a, 0x01, 0x6a, 0x15, 0x47, 0x5f, 0xfa,
      0xc0, 0x0a, 0x08, 0x0a, 0x01, 0x43, 0x15, 0xdd, 0x62, 0x04, 0xc1, 0x0a, 0x08, 0x0a, 0x01, 0x71, 0x15, 0x2d, 0xb8,
      0x11, 0xc1, 0x0a, 0x08, 0x0a, 0x01, 0x78, 0x15, 0xce, 0xb0, 0x21, 0xc1, 0x0a, 0x08, 0x0a, 0x01, 0x49, 0x15, 0x36,
      0xb1, 0x21, 0xc1, 0x0a, 0x08, 0x0a, 0x01, 0x55, 0x15, 0x9f, 0xb1, 0x21, 0xc1, 0x0a, 0x08, 0x0a, 0x01, 0x56, 0x15,
      0x08, 0xb2, 0x21, 0xc1, 0x0a, 0x08, 0x0a, 0x01, 0x4f, 0x15, 0x71, 0xb2, 0x21, 0xc1, 0x0a, 0x08, 0x0a, 0x01, 0x4e,
      0x15, 0xda, 0xb2, 0x21, 0xc1, 0x0a, 0x08, 0x0a, 0x01, 0x52, 0x15, 0x43, 0xb3, 0x21, 0xc1, 0x0a, 0x08, 0x0a, 0x01,
      0x4c, 0x15, 0xac, 0xb3, 0x21, 0xc1, 0x0a, 0x08, 0x0a, 0x01, 0x44, 0x15, 0x14, 0xb4, 0x21, 0xc1, 0x0a, 0x08, 0x0a,
      0x01, 0x4a, 0x15, 0x7d, 0xb4, 0x21, 0xc1, 0x0a, 0x08, 0x0a, 0x01, 0x5a, 0x15, 0xe6, 0xb4, 0x21, 0xc1, 0x0a, 0x08,
      0x0a, 0x01, 0x50, 0x15, 0x4f, 0xb5, 0x21, 0xc1, 0x0a, 0x08, 0x0a, 0x01, 0x4b, 0x15, 0xb8, 0xb5, 0x21, 0xc1, 0x0a,
      0x08, 0x0a, 0x01, 0x42, 0x15, 0x21, 0xb6, 0x21, 0xc1, 0x0a, 0x08, 0x0a, 0x01, 0x48, 0x15, 0x8a, 0xb6, 0x21, 0xc1,
      0x0a, 0x08, 0x0a, 0x01, 0x46, 0x15, 0xf2, 0xb6, 0x21, 0xc1, 0x0a, 0x08, 0x0a, 0x01, 0x53, 0x15, 0x5b, 0xb7, 0x21,
      0xc1, 0x0a, 0x08, 0x0a, 0x01, 0x4d, 0x15, 0xc4, 0xb7, 0x21, 0xc1, 0x0a, 0x09, 0x0a, 0x02, 0xc3, 0x9c, 0x15, 0x27,
      0xb8, 0x21, 0xc1, 0x0a, 0x08, 0x0a, 0x01, 0x27, 0x15, 0x2d, 0xb8, 0x21, 0xc1, 0x0a, 0x08, 0x0a, 0x01, 0x45, 0x15,
      0x2d, 0xb8, 0x21, 0xc1, 0x12, 0x32, 0x12, 0x16, 0x2e, 0x2f, 0x2e, 0x61, 0x74, 0x74, 0x6e, 0x2d, 0x73, 0x70, 0x6d,
      0x2d, 0x68, 0x7a, 0x48, 0x45, 0x54, 0x56, 0x2f, 0x73, 0x70, 0x6d, 0x18, 0x01, 0x20, 0x50, 0x55, 0x00, 0x00, 0x80,
      0x3f, 0x58, 0x00, 0x80, 0x01, 0x02, 0xc0, 0x02, 0x03, 0xc8, 0x02, 0x01, 0xd0, 0x02, 0x02, 0xd8, 0x02, 0x00, 0x1a,
      0x0a, 0x0a, 0x08, 0x69, 0x64, 0x65, 0x6e, 0x74, 0x69, 0x74, 0x79,
  };
  const std::string model(reinterpret_cast<const char*>(bytes), sizeof(bytes));
  try {
    (void)attn::data::SubwordModel::from_serialized(model, "fuzzed.model");
    ADD_FAILURE() << "a model with an empty piece loaded";
  } catch (const attn::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("'fuzzed.model': a damaged model"), std::string::npos) << e.what();
  }
}

namespace attn::data {
namespace {

// The pointer-generator's extended ids (data/parallel.h, decode/translate.h): unknown pieces
// keep their surface text, and output ids that copy them decode to that text.
TEST_F(SubwordTest, PointerCopiesOfUnknownPiecesKeepTheirText) {
  const auto model = SubwordModel::load(model_path());
  const int32_t V = model.vocab_size();
  const std::string text = "Ein Mann mit Ωμέγα und 東京 mit Ωμέγα.";  // letters no training line has
  const EncodedOovs e = encode_with_oovs(model, text, 100);
  ASSERT_EQ(e.ids.size(), e.ext.size());
  ASSERT_FALSE(e.oovs.empty());
  for (size_t i = 0; i < e.ids.size(); ++i) {
    if (e.ids[i] != kSubwordUnk) {
      EXPECT_EQ(e.ext[i], e.ids[i]);
      continue;
    }
    ASSERT_GE(e.ext[i], V);  // an unknown piece: V + its index among the distinct OOVs
    EXPECT_EQ(e.pieces[i], e.oovs[static_cast<size_t>(e.ext[i] - V)]);
  }
  // Ωμέγα twice is one OOV; 東京 another (each as its surface text).
  EXPECT_EQ(e.oovs.size(), 2u);
  for (const std::string& oov : e.oovs) EXPECT_NE(oov.find_first_of("\xCE\xE6"), std::string::npos) << oov;
  // A decoder that copies the whole source (then EOS): the text comes back, unknown pieces
  // included, where the vocabulary alone gives SentencePiece's unknown mark.
  std::vector<int32_t> out = e.ext;
  out.push_back(kEos);
  EXPECT_EQ(decode::output_text(model, out, e.oovs), squeeze_spaces(text));
  EXPECT_NE(model.decode(e.ids), squeeze_spaces(text));
  const std::vector<std::string> pieces = decode::output_pieces(model, out, e.oovs);
  ASSERT_EQ(pieces.size(), out.size());
  EXPECT_EQ(pieces.back(), model.pieces({kEos}).front());
}

}  // namespace
}  // namespace attn::data
