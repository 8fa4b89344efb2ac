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

namespace {

struct TransformerNames {
  std::string activation, positions;
};
using TransformerForm = detail::ConfigForm<TransformerConfig, TransformerNames>;

TransformerForm form_of(const TransformerConfig& c) {
  return {c, {to_string(c.activation), to_string(c.positions)}, {}};
}

// The keys to_json always writes, each with its field.
std::vector<detail::ConfigField> written(TransformerForm& f) {
  return {{"src_vocab", &f.c.src_vocab},
          {"tgt_vocab", &f.c.tgt_vocab},
          {"classes", &f.c.classes},
          {"d_model", &f.c.d_model},
          {"heads", &f.c.heads},
          {"ffn", &f.c.ffn},
          {"encoder_layers", &f.c.encoder_layers},
          {"decoder_layers", &f.c.decoder_layers},
          {"dropout", &f.c.dropout},
          {"norm_first", &f.c.norm_first},
          {"activation", &f.names.activation},
          {"positions", &f.names.positions},
          {"max_len", &f.c.max_len},
          {"share_embeddings", &f.c.share_embeddings},
          {"tie_output", &f.c.tie_output},
          {"seed", &f.c.seed}};
}

void parse_names(TransformerConfig& c, const TransformerNames& names) {
  c.activation = parse_ffn_activation(names.activation);
  c.positions = parse_position_kind(names.positions);
}

}  // namespace

nlohmann::json TransformerConfig::to_json() const {
  TransformerForm form = form_of(*this);
  nlohmann::json j = detail::write_config(written(form));
  detail::write_normalizer(j, normalizer);
  if (pointer) j["pointer"] = true;  // absent when off: older checkpoints keep their form
  return j;
}

TransformerConfig TransformerConfig::from_json(const nlohmann::json& j) {
  TransformerForm form = form_of(TransformerConfig{});
  // The normaliser's keys and the pointer's are newer: last.
  detail::read_config("transformer", j,
                      detail::joined({written(form), form.normalizer.fields(), {{"pointer", &form.c.pointer}}}));
  return form.parsed();
}

}  // namespace attn::models
