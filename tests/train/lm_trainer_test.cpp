#include "attn/train/lm_trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "attn/data/text.h"
#include "attn/decode/sample.h"
#include "attn/io/safetensors.h"
#include "attn/train/checkpoint.h"
#include "test_support.h"

namespace attn::train {
namespace {
using namespace attn::decode;  // load_char_lm, sample_text
using data::CharVocab;
using data::utf8_characters;
namespace fs = std::filesystem;

// A one-layer causal LM configuration without dropout.
models::TransformerConfig one_layer_lm(int64_t d_model, int64_t heads, int64_t ffn) {
  models::TransformerConfig config;
  config.d_model = d_model;
  config.heads = heads;
  config.ffn = ffn;
  config.decoder_layers = 1;
  config.dropout = 0.0f;
  return config;
}

TEST(CharVocab, Utf8Characters) {
  EXPECT_EQ(utf8_characters("aé€😀"), (std::vector<std::string>{"a", "é", "€", "😀"}));
  EXPECT_EQ(utf8_characters(std::string("a\xC3")), (std::vector<std::string>{"a", "\xEF\xBF\xBD"}));  // truncated é
  EXPECT_EQ(utf8_characters(std::string("\xFF"
                                        "b")),
            (std::vector<std::string>{"\xEF\xBF\xBD", "b"}));
  EXPECT_TRUE(utf8_characters("").empty());
}

TEST(CharVocab, BuildEncodeDecode) {
  const CharVocab vocab = CharVocab::build({"abba", "cab"});
  // b ×3, a ×3 (tie: code point order), c ×1.
  EXPECT_EQ(vocab.characters(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(vocab.size(), 7);
  EXPECT_EQ(vocab.encode("cab?"), (std::vector<int32_t>{6, 4, 5, CharVocab::kUnk}));
  EXPECT_EQ(vocab.decode({1, 6, 4, 0, 5, 2, 4}), "cab");  // BOS and PAD skipped, stops at EOS
}

// Issue 34, defect 12: a crafted character list (several characters in one entry,
// duplicates, a newline, an ESC) was accepted, and `attn sample` printed 9 lines for 2
// samples, with terminal escapes.
TEST(CharVocab, ACheckpointsListIsValidated) {
  EXPECT_EQ(CharVocab({"a", "\xC3\xA9", "\xF0\x9F\x98\x80", " "}).size(), 8);
  EXPECT_THROW_MSG(CharVocab({"a", "ab"}), ValueError, "character list: entry 1 (\"ab\") is not one UTF-8 character");
  EXPECT_THROW_MSG(CharVocab({""}), ValueError, "entry 0 (\"\") is not one UTF-8 character");
  EXPECT_THROW_MSG(CharVocab({"\xe9"}), ValueError, "entry 0 (\"\\xe9\") is not one UTF-8 character");
  EXPECT_THROW_MSG(CharVocab({"a", "\n"}), ValueError, "entry 1 (\"\\x0a\") is a control character");
  EXPECT_THROW_MSG(CharVocab({"\x1b"}), ValueError, "entry 0 (\"\\x1b\") is a control character");
  EXPECT_THROW_MSG(CharVocab({"\xC2\x9B"}), ValueError, "is a control character");  // U+009B, 8-bit CSI
  EXPECT_THROW_MSG(CharVocab({"a", "b", "a"}), ValueError, "entry 2 (\"a\") appears twice");
  // Training never builds a list its own loader would refuse: control characters are unknown.
  const CharVocab built = CharVocab::build({"a\r", "b\x1b[2J"});
  EXPECT_EQ(built.characters(), (std::vector<std::string>{"2", "J", "[", "a", "b"}));
  EXPECT_EQ(built.encode("\r").at(0), CharVocab::kUnk);
}

// The loader reports the list as bad metadata, one line, naming the file.
TEST(CharVocab, LoadRefusesACraftedList) {
  models::TransformerConfig config = one_layer_lm(8, 1, 8);
  config.tgt_vocab = 6;
  nlohmann::json meta = lm_metadata(config, CharVocab({"a", "b"}), 10, 0, 0.0);
  meta["characters"] = {"a", "\n\x1b[31m"};
  io::SafetensorsFile file;
  file.metadata[io::kAttnMetadataKey] = meta.dump();
  EXPECT_THROW_MSG(load_char_lm(file, "lm.safetensors"), IoError,
                   "lm.safetensors: bad 'attn' metadata: character list: entry 1 (\"\\x0a\\x1b[31m\") is not one UTF-8 "
                   "character");
  // A configuration whose positions leave no room for a character after BOS.
  meta["characters"] = {"a", "b"};
  config.max_len = 1;
  meta["config"] = config.to_json();
  file.metadata[io::kAttnMetadataKey] = meta.dump();
  EXPECT_THROW_MSG(load_char_lm(file, "lm.safetensors"), IoError,
                   "lm.safetensors: bad model configuration: max_len 1 leaves no position for a character after the "
                   "start symbol (at least 2)");
}

TEST(LmTrainer, LearnsCharactersAndSamples) {
  ATTN_SKIP_WITHOUT_DATA("tatoeba-fra-eng/fra.txt.gz");
  const fs::path out = attn::testing::process_temp_dir() / "lm_trainer";
  fs::remove_all(out);
  const models::TransformerConfig config = one_layer_lm(32, 2, 64);
  LmOptions o;
  o.data_dir = attn::testing::data_dir() + "/tatoeba-fra-eng";
  o.train_limit = 600;
  o.max_chars = 40;
  o.batch = 32;
  o.steps = 120;
  o.lr = 3e-3f;
  o.warmup = 10;
  o.eval_every = 120;
  o.eval_sentences = 0;
  o.out_dir = out.string();
  o.progress = nullptr;
  const LmResult r = train_char_lm(config, o);
  EXPECT_EQ(r.steps_done, 120);
  LoadedLm lm = load_char_lm(r.model_path);
  // A uniform guess costs log(V) nats per character; the trained model must do far better.
  const double uniform = std::log(static_cast<double>(lm.vocab.size()));
  EXPECT_LT(r.best_val_loss, 0.75 * uniform) << "uniform " << uniform;
  EXPECT_NEAR(r.best_val_bits_per_char, r.best_val_loss / std::log(2.0), 1e-9);

  // Greedy sampling is deterministic, continues the prompt and uses only known characters.
  models::SampleOptions greedy{.max_len = 30, .temperature = 0.0f};
  const std::string a = sample_text(lm, "I ", greedy), b = sample_text(lm, "I ", greedy);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.rfind("I ", 0), 0u);
  EXPECT_GT(a.size(), 2u);
  models::SampleOptions hot{.max_len = 30, .temperature = 1.0f, .seed = 7};
  for (const auto& c : utf8_characters(sample_text(lm, "", hot)))
    EXPECT_NE(lm.vocab.encode(c).at(0), CharVocab::kUnk) << "sampled an unknown character";
  EXPECT_EQ(checkpoint_format(r.model_path), "attn-lm");
}

TEST(LmTrainer, Errors) {
  LmOptions o;
  o.out_dir = "/tmp/unused";
  EXPECT_THROW_MSG(o.validate(), ValueError, "--data");
  o.data_dir = "/nonexistent";
  EXPECT_THROW_MSG(train_char_lm({}, o), IoError, "fra.txt.gz");
  o.batch = 0;
  EXPECT_THROW_MSG(o.validate(), ValueError, "--batch");
  EXPECT_THROW_MSG(load_char_lm("/nonexistent/model.safetensors"), IoError, "/nonexistent/model.safetensors");
}

}  // namespace
}  // namespace attn::train
