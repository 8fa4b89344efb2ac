// Issue 18 item 3: configuration bounds and the up-front memory estimates.
#include "attn/models/memory_estimate.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "attn/error.h"
#include "attn/models/classifier.h"
#include "attn/models/seq2seq.h"
#include "attn/models/transformer.h"
#include "test_support.h"

namespace attn::models {
namespace {

double actual_parameter_bytes(nn::Module& m) {
  double n = 0;
  for (const auto& [name, t] : m.named_parameters()) n += static_cast<double>(t.numel());
  return 4.0 * n;
}

TEST(ConfigBounds, HugeFieldsAreRefusedBeforeAnyAllocation) {
  // These used to hang with memory growing (a billion RNN layers were being built).
  EXPECT_THROW_MSG(Seq2SeqConfig::from_json(nlohmann::json{{"layers", 1000000000}}), ValueError,
                   "'layers' must be <= 256, got 1000000000");
  EXPECT_THROW_MSG(Seq2SeqConfig::from_json(nlohmann::json::parse(R"({"layers": 1e9})")), ValueError, "'layers'");
  EXPECT_THROW_MSG(TransformerConfig::from_json(nlohmann::json{{"decoder_layers", 1000000000}}), ValueError,
                   "'decoder_layers' must be <= 256");
  EXPECT_THROW_MSG(TransformerConfig::from_json(nlohmann::json{{"d_model", int64_t{1} << 40}, {"heads", 1}}),
                   ValueError, "'d_model' must be <=");
  EXPECT_THROW_MSG(BiLstmConfig::from_json(nlohmann::json{{"vocab", 10}, {"layers", 1000000000}}), ValueError,
                   "'layers' must be <= 256");
  Seq2SeqConfig billion;
  billion.layers = 1000000000;
  EXPECT_THROW_MSG(Seq2Seq m(billion), ValueError, "'layers' must be <= 256");
}

TEST(MemoryEstimate, ParameterEstimatesAreWithinAFewPercentOfTheRealModels) {
  for (AttentionKind attention : {AttentionKind::none, AttentionKind::bahdanau, AttentionKind::luong}) {
    for (bool bidirectional : {false, true}) {
      Seq2SeqConfig c;
      c.encoder = bidirectional ? RnnCell::lstm : RnnCell::gru;
      c.layers = 2;
      c.bidirectional = bidirectional;
      c.attention = attention;
      Seq2Seq m(c);
      const double actual = actual_parameter_bytes(m), estimate = parameter_bytes(c);
      EXPECT_GE(estimate, actual) << to_string(attention) << " bidirectional=" << bidirectional;
      EXPECT_LE(estimate, 1.25 * actual) << to_string(attention) << " bidirectional=" << bidirectional;
    }
  }
  BiLstmConfig b{.vocab = 1000};
  BiLstmClassifier classifier(b);
  EXPECT_GE(parameter_bytes(b), actual_parameter_bytes(classifier));
  EXPECT_LE(parameter_bytes(b), 1.1 * actual_parameter_bytes(classifier));
  TransformerConfig t{.src_vocab = 500, .tgt_vocab = 600, .d_model = 64, .heads = 4, .ffn = 128, .normalizer = {}};
  TransformerSeq2Seq transformer(t);
  EXPECT_GE(parameter_bytes(t), actual_parameter_bytes(transformer));
  EXPECT_LE(parameter_bytes(t), 1.5 * actual_parameter_bytes(transformer));
}

TEST(MemoryEstimate, ActivationsGrowWithTheBatchAndTheAttentionMatrix) {
  const Seq2SeqConfig c;
  // Decoding keeps T x S weights per row: 10x longer sources and outputs, more than 10x the
  // bytes (the T x S term takes over from the linear ones).
  const double small = seq2seq_decoding_bytes(c, 100, 100, 100), large = seq2seq_decoding_bytes(c, 100, 1000, 1000);
  EXPECT_GT(large, 15.0 * small);
  EXPECT_GT(seq2seq_training_bytes(c, 64, 80, 80), 2.0 * seq2seq_training_bytes(c, 32, 80, 80) * 0.99);
  // The eval --eval-lengths 1000000 case: far beyond any machine.
  EXPECT_GT(seq2seq_decoding_bytes(c, 100, 1000000, 1000006), 1e14);
  EXPECT_GT(bilstm_training_bytes(BiLstmConfig{.vocab = 100}, 32, 200000), 1e11);  // the 24 GB OOM
}

TEST(MemoryEstimate, BiLstmReadsAtMostItsTokenCap) {
  BiLstmClassifier classifier(BiLstmConfig{.vocab = 10});
  EXPECT_EQ(classifier.max_tokens(), kBiLstmMaxTokens);
  std::vector<int32_t> ids(200000, 3);
  keep_first_tokens(ids, classifier.max_tokens(), classifier.kind());
  EXPECT_EQ(static_cast<int64_t>(ids.size()), kBiLstmMaxTokens);
}

TEST(MemoryEstimate, FormatBytes) {
  EXPECT_EQ(format_bytes(512), "512 bytes");
  EXPECT_EQ(format_bytes(1.5 * 1024 * 1024 * 1024), "1.5 GiB");
}

}  // namespace
}  // namespace attn::models
