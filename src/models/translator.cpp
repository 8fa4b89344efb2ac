#include "attn/models/translator.h"

#include "attn/error.h"
#include "attn/ops/loss.h"

namespace attn::models {
namespace {

class RnnTranslator : public Translator {
 public:
  explicit RnnTranslator(const Seq2SeqConfig& config) : model_(config) {}
  nn::Module& module() override { return model_; }
  std::string kind() const override { return "rnn"; }
  nlohmann::json config_json() const override { return model_.config().to_json(); }
  int64_t vocab() const override { return model_.config().vocab; }

  Tensor loss(const data::Batch& batch, float label_smoothing) override {
    const DecoderOutput out = model_.forward(batch);  // logits (T, B, V)
    const Tensor ce = cross_entropy(out.logits, time_major_ids(batch.tgt_out),
                                    {.ignore_index = data::kPad, .label_smoothing = label_smoothing});
    return model_.with_reinforce(ce, out, batch);
  }

  DecodeResult decode(const Tensor& src, const Tensor& src_lengths, int beam, int max_len, float length_penalty,
                      AttentionSelect) override {
    if (beam <= 1) return model_.greedy(src, src_lengths, max_len);
    return model_.beam(src, src_lengths, {.width = beam, .length_penalty = length_penalty, .max_len = max_len});
  }

  int attention_layers() const override { return model_.decoder.attention ? 1 : 0; }
  int attention_heads() const override {
    return model_.decoder.attention ? static_cast<int>(model_.decoder.attention->weight_heads()) : 0;
  }

 private:
  Seq2Seq model_;
};

class TransformerTranslator : public Translator {
 public:
  explicit TransformerTranslator(const TransformerConfig& config) : model_(config) {}
  nn::Module& module() override { return model_; }
  std::string kind() const override { return "transformer"; }
  nlohmann::json config_json() const override { return model_.config().to_json(); }
  int64_t vocab() const override { return model_.config().tgt_vocab; }

  Tensor loss(const data::Batch& batch, float label_smoothing) override { return model_.loss(batch, label_smoothing); }

  DecodeResult decode(const Tensor& src, const Tensor& src_lengths, int beam, int max_len, float length_penalty,
                      AttentionSelect select) override {
    if (beam <= 1) return model_.greedy(src, src_lengths, max_len, select);
    return model_.beam(src, src_lengths, {.width = beam, .length_penalty = length_penalty, .max_len = max_len}, select);
  }

  int attention_layers() const override { return model_.config().decoder_layers; }
  int attention_heads() const override { return static_cast<int>(model_.config().heads); }
  TransformerSeq2Seq::AttentionMaps attention_maps(const data::Batch& batch) override {
    return model_.attention_maps(batch);
  }

 private:
  TransformerSeq2Seq model_;
};

}  // namespace

std::unique_ptr<Translator> make_translator(const std::string& kind, const nlohmann::json& config) {
  if (kind == "rnn") return std::make_unique<RnnTranslator>(Seq2SeqConfig::from_json(config));
  if (kind == "transformer") return std::make_unique<TransformerTranslator>(TransformerConfig::from_json(config));
  throw ValueError("unknown translation model '" + kind + "' (valid: rnn, transformer)");
}

}  // namespace attn::models
