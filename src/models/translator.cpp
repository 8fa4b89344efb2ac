#include "attn/models/translator.h"

#include <type_traits>

#include "attn/error.h"

namespace attn::models {
namespace {

// What both families share: the model, its configuration, its loss and its decoding.
template <typename Model, typename Config>
class ModelTranslator : public Translator {
 public:
  explicit ModelTranslator(const Config& config) : model_(config) {}
  TranslatorKind kind() const override {
    return std::is_same_v<Model, Seq2Seq> ? TranslatorKind::rnn : TranslatorKind::transformer;
  }
  nn::Module& module() override { return model_; }
  nlohmann::json config_json() const override { return model_.config().to_json(); }
  Tensor loss(const Batch& batch, float label_smoothing) override { return model_.loss(batch, label_smoothing); }
  DecodeResult decode(const Tensor& src, const Tensor& src_lengths, const TranslatorDecodeOptions& o) override {
    const BeamOptions beam{.width = o.beam,
                           .length_penalty = o.length_penalty,
                           .max_len = o.max_len,
                           .coverage_penalty = o.coverage_penalty,
                           .stop = o.stop,
                           .rules = o.rules};
    if constexpr (std::is_same_v<Model, Seq2Seq>) {  // one attention: nothing to select
      return o.beam <= 1 ? model_.greedy(src, src_lengths, o.max_len, o.src_ext, o.extended_vocab)
                         : model_.beam(src, src_lengths, beam, o.src_ext, o.extended_vocab);
    } else {
      return o.beam <= 1 ? model_.greedy(src, src_lengths, o.max_len, o.select, o.src_ext, o.extended_vocab)
                         : model_.beam(src, src_lengths, beam, o.select, o.src_ext, o.extended_vocab);
    }
  }

 protected:
  Model model_;
};

class RnnTranslator : public ModelTranslator<Seq2Seq, Seq2SeqConfig> {
 public:
  using ModelTranslator::ModelTranslator;
  Seq2Seq* rnn() override { return &model_; }
  int64_t vocab() const override { return model_.config().vocab; }
  int attention_layers() const override { return model_.decoder.attention ? 1 : 0; }
  int attention_heads() const override {
    return model_.decoder.attention ? static_cast<int>(model_.decoder.attention->weight_heads()) : 0;
  }
  bool online_attention() const override { return model_.decoder.attention && model_.decoder.attention->online(); }
};

class TransformerTranslator : public ModelTranslator<TransformerSeq2Seq, TransformerConfig> {
 public:
  using ModelTranslator::ModelTranslator;
  TransformerSeq2Seq* transformer() override { return &model_; }
  int64_t vocab() const override { return model_.config().tgt_vocab; }
  int attention_layers() const override { return model_.config().decoder_layers; }
  int attention_heads() const override { return static_cast<int>(model_.config().heads); }
  TransformerSeq2Seq::AttentionMaps attention_maps(const Batch& batch) override { return model_.attention_maps(batch); }
};

}  // namespace

const char* to_string(TranslatorKind kind) { return kind == TranslatorKind::rnn ? "rnn" : "transformer"; }

TranslatorKind parse_translator_kind(const std::string& name) {
  for (TranslatorKind kind : {TranslatorKind::rnn, TranslatorKind::transformer})
    if (name == to_string(kind)) return kind;
  throw ValueError("unknown translation model '" + name + "' (valid: rnn, transformer)");
}

void set_translator_vocab(TranslatorKind kind, nlohmann::json& config, int64_t vocab) {
  if (kind == TranslatorKind::rnn) {
    config["vocab"] = vocab;
  } else {
    config["src_vocab"] = vocab;
    config["tgt_vocab"] = vocab;
  }
}

std::unique_ptr<Translator> make_translator(TranslatorKind kind, const nlohmann::json& config) {
  if (kind == TranslatorKind::rnn) return std::make_unique<RnnTranslator>(Seq2SeqConfig::from_json(config));
  return std::make_unique<TransformerTranslator>(TransformerConfig::from_json(config));
}

}  // namespace attn::models
