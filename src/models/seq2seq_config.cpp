// Seq2SeqConfig: validation and the JSON form stored in checkpoints.
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "attn/models/memory_estimate.h"
#include "attn/models/seq2seq.h"
#include "config_json.h"

namespace attn::models {
namespace {

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  return s;
}

// The position of `value` in `valid`; ValueError listing them otherwise.
size_t parse_name(const char* what, const std::string& value, const std::vector<std::string>& valid) {
  for (size_t i = 0; i < valid.size(); ++i)
    if (valid[i] == value) return i;
  throw ValueError(fmt::format("unknown {} '{}' (valid: {})", what, value, join(valid)));
}

// In the order of the enums RnnCell and AttentionKind.
const std::vector<std::string> kEncoders = {"gru", "lstm"};
const std::vector<std::string> kAttentions = {"none", "bahdanau", "luong"};
const std::vector<std::string> kBahdanauScores = {"additive", "additive_normalized"};
const std::vector<std::string> kLuongScores = {"dot",       "general", "concat",  "location", "scaled_dot",
                                               "multihead", "local_m", "local_p", "hard"};

// A name from kBahdanauScores or kLuongScores, already checked.
nn::StepScore step_score(const std::string& name) { return *nn::find_step_score(name); }

}  // namespace

std::string Seq2SeqConfig::effective_score() const {
  if (!score.empty()) return score;
  if (attention == "bahdanau") return "additive";
  if (attention == "luong") return "general";
  return "none";
}

Seq2SeqChoices Seq2SeqConfig::choices() const {
  Seq2SeqChoices c;
  c.encoder = static_cast<RnnCell>(parse_name("encoder", encoder, kEncoders));
  c.attention = static_cast<AttentionKind>(parse_name("attention", attention, kAttentions));
  const std::string s = effective_score();
  switch (c.attention) {
    case AttentionKind::bahdanau:
      parse_name("score for bahdanau attention", s, kBahdanauScores);
      c.score = step_score(s);
      break;
    case AttentionKind::luong:
      parse_name("score for luong attention", s, kLuongScores);
      c.score = step_score(s);
      break;
    case AttentionKind::none:
      if (s != "none")
        throw ValueError(fmt::format("score '{}' given for attention 'none' (valid: none, or leave it empty)", s));
      break;
  }
  return c;
}

void Seq2SeqConfig::validate() const {
  check_config_bounds(*this);  // upper bounds (memory_estimate.cpp)
  const Seq2SeqChoices c = choices();
  const std::string s = effective_score();
  auto positive = [](const char* name, int value, int lo) {
    if (value < lo) throw ValueError(fmt::format("{} must be >= {}, got {}", name, lo, value));
  };
  positive("layers", layers, 1);
  positive("emb", emb, 1);
  positive("hidden", hidden, 1);
  positive("vocab", vocab, kEos + 2);  // the specials and at least one entry
  positive("max_src_len", max_src_len, 1);
  positive("heads", heads, 1);
  const bool attends = c.attention != AttentionKind::none;
  positive("window", window, attends && c.score == nn::StepScore::local_p ? 1 : 0);
  if (attends && c.score == nn::StepScore::multihead && hidden % heads != 0)
    throw ValueError(fmt::format("multihead: hidden={} is not divisible by heads={}", hidden, heads));
  if (!(dropout >= 0.0f && dropout < 1.0f)) throw ValueError(fmt::format("dropout must be in [0, 1), got {}", dropout));
  if (c.attention == AttentionKind::luong && bidirectional &&
      (c.score == nn::StepScore::dot || c.score == nn::StepScore::scaled_dot))
    throw ValueError(fmt::format(
        "luong {}: decoder state D={} differs from encoder state E={} (bidirectional): use 'general' or 'concat'", s,
        hidden, 2 * hidden));
}

nlohmann::json Seq2SeqConfig::to_json() const {
  return nlohmann::json{{"encoder", encoder},     {"layers", layers},
                        {"bidirectional", bidirectional}, {"emb", emb},
                        {"hidden", hidden},       {"dropout", dropout},
                        {"attention", attention}, {"score", score},
                        {"input_feeding", input_feeding}, {"vocab", vocab},
                        {"max_src_len", max_src_len}, {"heads", heads},
                        {"window", window}, {"seed", seed}};
}

Seq2SeqConfig Seq2SeqConfig::from_json(const nlohmann::json& j) {
  Seq2SeqConfig c;
  detail::read_config("seq2seq", j, {{"encoder", &c.encoder}, {"layers", &c.layers},
                                     {"bidirectional", &c.bidirectional}, {"emb", &c.emb},
                                     {"hidden", &c.hidden}, {"dropout", &c.dropout},
                                     {"attention", &c.attention}, {"score", &c.score},
                                     {"input_feeding", &c.input_feeding}, {"vocab", &c.vocab},
                                     {"max_src_len", &c.max_src_len}, {"heads", &c.heads},
                                     {"window", &c.window}, {"seed", &c.seed}});
  c.validate();
  return c;
}

std::string Seq2SeqConfig::to_json_string() const { return to_json().dump(); }

Seq2SeqConfig Seq2SeqConfig::from_json_string(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw ValueError(std::string("seq2seq config: not valid JSON: ") + e.what());
  }
  return from_json(j);
}

}  // namespace attn::models
