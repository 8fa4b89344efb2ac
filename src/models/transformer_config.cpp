// TransformerConfig: validation, the layer options it implies, and the JSON form stored in
// checkpoints (every field; from_json takes a subset, rejects unknown keys and wrong types).
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "attn/error.h"
#include "attn/models/memory_estimate.h"
#include "attn/models/transformer.h"
#include "config_json.h"

namespace attn::models {

FfnActivation parse_ffn_activation(const std::string& name) {
  return nn::parse_ffn_activation(name, "transformer config");
}
const char* to_string(PositionKind positions) { return positions == PositionKind::learned ? "learned" : "sinusoidal"; }
PositionKind parse_position_kind(const std::string& name) {
  if (name == "sinusoidal") return PositionKind::sinusoidal;
  if (name == "learned") return PositionKind::learned;
  throw ValueError(fmt::format("transformer config: unknown positions '{}' (valid: sinusoidal, learned)", name));
}

nn::TransformerLayerOptions TransformerConfig::layer_options() const {
  return {.d_model = d_model,
          .heads = heads,
          .ffn = ffn,
          .dropout = dropout,
          .norm_first = norm_first,
          .activation = activation,
          .seed = seed,
          .normalizer = normalizer};
}

void TransformerConfig::validate() const {
  check_config_bounds(*this);  // upper bounds (memory_estimate.cpp)
  auto at_least = [](const char* name, int64_t value, int64_t lo) {
    if (value < lo) throw ValueError(fmt::format("transformer config: {} must be >= {}, got {}", name, lo, value));
  };
  at_least("src_vocab", src_vocab, 0);
  at_least("tgt_vocab", tgt_vocab, 0);
  at_least("classes", classes, 1);
  at_least("d_model", d_model, 1);
  at_least("heads", heads, 1);
  at_least("ffn", ffn, 1);
  at_least("encoder_layers", encoder_layers, 0);
  at_least("decoder_layers", decoder_layers, 0);
  at_least("max_len", max_len, 1);
  if (d_model % heads != 0)
    throw ValueError(fmt::format("transformer config: d_model={} is not divisible by heads={}", d_model, heads));
  if (!(dropout >= 0.0f && dropout < 1.0f))
    throw ValueError(fmt::format("transformer config: dropout must be in [0, 1), got {}", dropout));
  if (share_embeddings && src_vocab != tgt_vocab)
    throw ValueError(fmt::format(
        "transformer config: share_embeddings needs src_vocab == tgt_vocab, got src_vocab={} and tgt_vocab={}",
        src_vocab, tgt_vocab));
  check_normalizer("transformer config", normalizer);
}

nlohmann::json TransformerConfig::to_json() const {
  nlohmann::json j{{"src_vocab", src_vocab},
                   {"tgt_vocab", tgt_vocab},
                   {"classes", classes},
                   {"d_model", d_model},
                   {"heads", heads},
                   {"ffn", ffn},
                   {"encoder_layers", encoder_layers},
                   {"decoder_layers", decoder_layers},
                   {"dropout", dropout},
                   {"norm_first", norm_first},
                   {"activation", to_string(activation)},
                   {"positions", to_string(positions)},
                   {"max_len", max_len},
                   {"share_embeddings", share_embeddings},
                   {"tie_output", tie_output},
                   {"seed", seed}};
  detail::write_normalizer(j, normalizer);
  if (pointer) j["pointer"] = true;  // absent when off: older checkpoints keep their form
  return j;
}

TransformerConfig TransformerConfig::from_json(const nlohmann::json& j) {
  TransformerConfig c;
  std::string activation = to_string(c.activation), positions = to_string(c.positions);  // the choices' names
  detail::NormalizerFields normalizer;
  std::vector<detail::ConfigField> fields = {{"src_vocab", &c.src_vocab},
                                             {"tgt_vocab", &c.tgt_vocab},
                                             {"classes", &c.classes},
                                             {"d_model", &c.d_model},
                                             {"heads", &c.heads},
                                             {"ffn", &c.ffn},
                                             {"encoder_layers", &c.encoder_layers},
                                             {"decoder_layers", &c.decoder_layers},
                                             {"dropout", &c.dropout},
                                             {"norm_first", &c.norm_first},
                                             {"activation", &activation},
                                             {"positions", &positions},
                                             {"max_len", &c.max_len},
                                             {"share_embeddings", &c.share_embeddings},
                                             {"tie_output", &c.tie_output},
                                             {"seed", &c.seed}};
  for (const detail::ConfigField& f : normalizer.fields()) fields.push_back(f);  // new keys last
  fields.push_back({"pointer", &c.pointer});
  detail::read_config("transformer", j, fields);
  c.normalizer = normalizer.normalizer();
  c.activation = parse_ffn_activation(activation);
  c.positions = parse_position_kind(positions);
  c.validate();
  return c;
}

}  // namespace attn::models
