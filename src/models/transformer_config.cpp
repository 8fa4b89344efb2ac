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

namespace attn::models {

nn::TransformerLayerOptions TransformerConfig::layer_options() const {
  nn::TransformerLayerOptions o;
  o.d_model = d_model;
  o.heads = heads;
  o.ffn = ffn;
  o.dropout = dropout;
  o.norm_first = norm_first;
  o.activation = activation;
  o.seed = seed;
  return o;
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
  if (activation != "relu" && activation != "gelu")
    throw ValueError(fmt::format("transformer config: unknown activation '{}' (valid: relu, gelu)", activation));
  if (positions != "sinusoidal" && positions != "learned")
    throw ValueError(fmt::format("transformer config: unknown positions '{}' (valid: sinusoidal, learned)", positions));
  if (share_embeddings && src_vocab != tgt_vocab)
    throw ValueError(fmt::format(
        "transformer config: share_embeddings needs src_vocab == tgt_vocab, got src_vocab={} and tgt_vocab={}",
        src_vocab, tgt_vocab));
}

nlohmann::json TransformerConfig::to_json() const {
  return nlohmann::json{{"src_vocab", src_vocab},
                        {"tgt_vocab", tgt_vocab},
                        {"classes", classes},
                        {"d_model", d_model},
                        {"heads", heads},
                        {"ffn", ffn},
                        {"encoder_layers", encoder_layers},
                        {"decoder_layers", decoder_layers},
                        {"dropout", dropout},
                        {"norm_first", norm_first},
                        {"activation", activation},
                        {"positions", positions},
                        {"max_len", max_len},
                        {"share_embeddings", share_embeddings},
                        {"tie_output", tie_output},
                        {"seed", seed}};
}

TransformerConfig TransformerConfig::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw ValueError("transformer config: expected a JSON object, got " + std::string(j.type_name()));
  TransformerConfig c;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const nlohmann::json& v = it.value();
    auto want = [&](bool ok, const char* type) {
      if (!ok) throw ValueError(fmt::format("transformer config: '{}' must be {}, got {}", key, type, v.dump()));
    };
    if (key == "activation" || key == "positions") {
      want(v.is_string(), "a string");
      (key == "activation" ? c.activation : c.positions) = v.get<std::string>();
    } else if (key == "norm_first" || key == "share_embeddings" || key == "tie_output") {
      want(v.is_boolean(), "a boolean");
      const bool value = v.get<bool>();
      if (key == "norm_first")
        c.norm_first = value;
      else if (key == "share_embeddings")
        c.share_embeddings = value;
      else
        c.tie_output = value;
    } else if (key == "src_vocab" || key == "tgt_vocab" || key == "classes" || key == "d_model" || key == "heads" ||
               key == "ffn" || key == "max_len") {
      want(v.is_number_integer() && (v.is_number_unsigned() ? v.get<uint64_t>() <= INT64_MAX : true), "an integer");
      const int64_t value = v.get<int64_t>();
      if (key == "src_vocab")
        c.src_vocab = value;
      else if (key == "tgt_vocab")
        c.tgt_vocab = value;
      else if (key == "classes")
        c.classes = value;
      else if (key == "d_model")
        c.d_model = value;
      else if (key == "heads")
        c.heads = value;
      else if (key == "ffn")
        c.ffn = value;
      else
        c.max_len = value;
    } else if (key == "encoder_layers" || key == "decoder_layers") {
      want(v.is_number_integer() && !(v.is_number_unsigned() && v.get<uint64_t>() > INT32_MAX) &&
               v.get<int64_t>() >= INT32_MIN && v.get<int64_t>() <= INT32_MAX,
           "an integer");
      (key == "encoder_layers" ? c.encoder_layers : c.decoder_layers) = v.get<int>();
    } else if (key == "dropout") {
      want(v.is_number(), "a number");
      c.dropout = v.get<float>();
    } else if (key == "seed") {
      want(v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0), "a non-negative integer");
      c.seed = v.get<uint64_t>();
    } else {
      throw ValueError(fmt::format(
          "transformer config: unknown key '{}' (valid: src_vocab, tgt_vocab, classes, d_model, heads, ffn, "
          "encoder_layers, decoder_layers, dropout, norm_first, activation, positions, max_len, share_embeddings, "
          "tie_output, seed)",
          key));
    }
  }
  c.validate();
  return c;
}

}  // namespace attn::models
