#pragma once
// Sampling text from a trained character-level language model: loading its checkpoint and
// continuing a prompt. What `attn sample` and the LM trainer's --resume run.
//
// Metadata "attn": {"format": "attn-lm", "config": TransformerConfig, "characters": [...],
// "step", "best_val_loss", "max_chars"}.
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "attn/data/char_vocab.h"
#include "attn/io/safetensors.h"
#include "attn/models/transformer.h"

namespace attn::decode {

inline constexpr const char* kLmFormat = "attn-lm";

nlohmann::json lm_metadata(const models::TransformerConfig& config, const data::CharVocab& vocab, int max_chars,
                           int64_t step, double best_val_loss);

struct LoadedLm {
  std::unique_ptr<models::TransformerLM> model;
  data::CharVocab vocab;
  int64_t step = 0;
  double best_val_loss = 0.0;
};
// IoError naming the path for a missing or foreign checkpoint or a vocabulary that does
// not fit the model.
LoadedLm load_char_lm(const std::string& path);
LoadedLm load_char_lm(const io::SafetensorsFile& file, const std::string& path);

// Continues `prompt` (may be empty: starts after BOS) with up to max_chars characters.
// ValueError when the prompt leaves the model no position to fill.
std::string sample_text(LoadedLm& lm, const std::string& prompt, const models::SampleOptions& options);

}  // namespace attn::decode
