#include "attn/decode/sample.h"

#include <algorithm>

#include "attn/data/tasks.h"
#include "attn/error.h"
#include "attn/io/checkpoint_read.h"

namespace attn::decode {
using nlohmann::json;

json lm_metadata(const models::TransformerConfig& config, const data::CharVocab& vocab, int max_chars, int64_t step,
                 double best_val_loss) {
  json j = io::run_metadata(kLmFormat, config.to_json());
  j.update(
      {{"characters", vocab.characters()}, {"max_chars", max_chars}, {"step", step}, {"best_val_loss", best_val_loss}});
  return j;
}

LoadedLm load_char_lm(const io::SafetensorsFile& file, const std::string& path) {
  const json j = io::read_run_metadata(file, path, kLmFormat, "a language model checkpoint");
  LoadedLm loaded;
  io::read_metadata_fields(path,
                           [&] { loaded.vocab = data::CharVocab(j.at("characters").get<std::vector<std::string>>()); });
  io::read_metadata_fields(path, "bad model configuration", [&] {
    loaded.model = std::make_unique<models::TransformerLM>(models::TransformerConfig::from_json(j.at("config")));
    loaded.step = j.at("step").get<int64_t>();
    loaded.best_val_loss = j.at("best_val_loss").get<double>();
  });
  // Position 0 holds the start symbol: a model of max_len 1 could never produce a character.
  if (loaded.model->config().max_len < 2)
    throw IoError(path + ": bad model configuration: max_len " + std::to_string(loaded.model->config().max_len) +
                  " leaves no position for a character after the start symbol (at least 2)");
  if (loaded.model->config().tgt_vocab != loaded.vocab.size())
    throw IoError(path + ": the model's vocabulary (" + std::to_string(loaded.model->config().tgt_vocab) +
                  ") differs from its character list (" + std::to_string(loaded.vocab.size()) + ")");
  io::load_model_parameters(file, loaded.model->named_parameters(), path);
  return loaded;
}

LoadedLm load_char_lm(const std::string& path) { return load_char_lm(io::load_safetensors(path), path); }

std::string sample_text(LoadedLm& lm, const std::string& prompt, const models::SampleOptions& options) {
  lm.model->eval();
  std::vector<int32_t> prefix{data::kBos};
  for (int32_t id : lm.vocab.encode(prompt)) prefix.push_back(id);
  const int64_t room = lm.model->config().max_len - static_cast<int64_t>(prefix.size());
  if (room < 1)
    throw ValueError("the prompt has " + std::to_string(prefix.size() - 1) +
                     " characters; the model's positions end at " + std::to_string(lm.model->config().max_len - 1));
  models::SampleOptions o = options;
  o.max_len = static_cast<int>(std::min<int64_t>(o.max_len, room));
  o.stop_id = data::kEos;
  return prompt + lm.vocab.decode(lm.model->sample(prefix, o));
}

}  // namespace attn::decode
