// Seq2SeqConfig: validation and the JSON form stored in checkpoints.
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "attn/error.h"
#include "attn/json.h"
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
const std::vector<std::string> kCoverages = {"none", "see", "tu"};
const std::vector<std::string> kBeamStops = {"bound", "top"};
const std::vector<std::string> kBeamRules = {"attn", "ctranslate2"};
const std::vector<std::string> kBahdanauScores = {"additive", "additive_normalized", "location_aware", "monotonic",
                                                  "mocha"};
const std::vector<std::string> kLuongScores = {"dot",       "general", "concat",  "location", "scaled_dot",
                                               "multihead", "local_m", "local_p", "hard"};

}  // namespace

const char* to_string(RnnCell cell) { return kEncoders.at(static_cast<size_t>(cell)).c_str(); }
RnnCell parse_rnn_cell(const std::string& name) { return static_cast<RnnCell>(parse_name("encoder", name, kEncoders)); }
const char* to_string(AttentionKind kind) { return kAttentions.at(static_cast<size_t>(kind)).c_str(); }
AttentionKind parse_attention_kind(const std::string& name) {
  return static_cast<AttentionKind>(parse_name("attention", name, kAttentions));
}

const char* to_string(CoverageKind kind) { return kCoverages.at(static_cast<size_t>(kind)).c_str(); }
nn::StepCoverage step_coverage(CoverageKind kind) {
  switch (kind) {
    case CoverageKind::none:
      return nn::StepCoverage::none;
    case CoverageKind::see:
      return nn::StepCoverage::see;
    case CoverageKind::tu:
      return nn::StepCoverage::tu;
  }
  return nn::StepCoverage::none;
}

CoverageKind parse_coverage_kind(const std::string& name) {
  return static_cast<CoverageKind>(parse_name("coverage", name, kCoverages));
}

const char* to_string(BeamStop stop) { return kBeamStops.at(static_cast<size_t>(stop)).c_str(); }
BeamStop parse_beam_stop(const std::string& name) {
  return static_cast<BeamStop>(parse_name("beam stop", name, kBeamStops));
}
const char* to_string(BeamRules rules) { return kBeamRules.at(static_cast<size_t>(rules)).c_str(); }
BeamRules parse_beam_rules(const std::string& name) {
  return static_cast<BeamRules>(parse_name("beam rules", name, kBeamRules));
}

std::optional<nn::StepScore> parse_score(AttentionKind attention, const std::string& name) {
  switch (attention) {
    case AttentionKind::bahdanau:
      if (name.empty()) return std::nullopt;
      parse_name("score for bahdanau attention", name, kBahdanauScores);
      return *nn::find_step_score(name);
    case AttentionKind::luong:
      if (name.empty()) return std::nullopt;
      parse_name("score for luong attention", name, kLuongScores);
      return *nn::find_step_score(name);
    case AttentionKind::none:
      if (!name.empty() && name != "none")
        throw ValueError(fmt::format("score '{}' given for attention 'none' (valid: none, or leave it empty)", name));
      return std::nullopt;
  }
  return std::nullopt;
}

nn::StepScore Seq2SeqConfig::step_score() const {
  if (score) return *score;
  return attention == AttentionKind::luong ? nn::StepScore::general : nn::StepScore::additive;
}

std::string Seq2SeqConfig::effective_score() const {
  return attention == AttentionKind::none ? score_name().empty() ? "none" : score_name()
                                          : nn::step_score_name(step_score());
}

std::string Seq2SeqConfig::score_name() const { return score ? nn::step_score_name(*score) : ""; }

void Seq2SeqConfig::validate() const {
  check_config_bounds(*this);            // upper bounds (memory_estimate.cpp)
  parse_score(attention, score_name());  // the score belongs to the attention
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
  const bool attends = attention != AttentionKind::none;
  const nn::StepScore score_used = step_score();
  positive("window", window, attends && score_used == nn::StepScore::local_p ? 1 : 0);
  if (attends && score_used == nn::StepScore::multihead && hidden % heads != 0)
    throw ValueError(fmt::format("multihead: hidden={} is not divisible by heads={}", hidden, heads));
  if (!(dropout >= 0.0f && dropout < 1.0f)) throw ValueError(fmt::format("dropout must be in [0, 1), got {}", dropout));
  positive("location_filters", location_filters, 1);
  positive("location_width", location_width, 1);
  if (location_width % 2 == 0)
    throw ValueError(
        fmt::format("location_width must be odd (a filter centred on the position), got {}", location_width));
  if (!(location_sharpening > 0.0f) || !std::isfinite(location_sharpening))
    throw ValueError(fmt::format("location_sharpening must be finite and > 0, got {}", location_sharpening));
  if (!std::isfinite(monotonic_bias))
    throw ValueError(fmt::format("monotonic_bias must be finite, got {}", monotonic_bias));
  if (!(monotonic_noise >= 0.0f) || !std::isfinite(monotonic_noise))
    throw ValueError(fmt::format("monotonic_noise must be finite and >= 0, got {}", monotonic_noise));
  positive("chunk", chunk, 1);
  if (attention == AttentionKind::luong && bidirectional &&
      (score_used == nn::StepScore::dot || score_used == nn::StepScore::scaled_dot))
    throw ValueError(fmt::format(
        "luong {}: decoder state D={} differs from encoder state E={} (bidirectional): use 'general' or 'concat'", s,
        hidden, 2 * hidden));
  if (coverage != CoverageKind::none &&
      !(attention == AttentionKind::bahdanau &&
        (score_used == nn::StepScore::additive || score_used == nn::StepScore::additive_normalized)))
    throw ValueError(fmt::format("coverage '{}' needs bahdanau attention with an additive score, got {} ({})",
                                 to_string(coverage), to_string(attention), s));
  if (!(coverage_loss >= 0.0f) || !std::isfinite(coverage_loss))
    throw ValueError(fmt::format("coverage_loss must be finite and >= 0, got {}", coverage_loss));
  check_normalizer("seq2seq config", normalizer);
  if (normalizer.kind != NormalizerKind::softmax) {
    const bool takes =
        attends && (score_used == nn::StepScore::additive || score_used == nn::StepScore::additive_normalized ||
                    score_used == nn::StepScore::dot || score_used == nn::StepScore::general ||
                    score_used == nn::StepScore::concat || score_used == nn::StepScore::location ||
                    score_used == nn::StepScore::location_aware);
    if (!takes)
      throw ValueError(
          fmt::format("normalizer '{}' needs bahdanau or luong attention with an additive, dot, general, "
                      "concat, location or location_aware score, got {} ({})",
                      normalizer_name(normalizer.kind), to_string(attention), s));
    if (location_smoothing)
      throw ValueError(
          fmt::format("normalizer '{}' cannot be combined with location smoothing (it replaces the softmax)",
                      normalizer_name(normalizer.kind)));
  }
  if (pointer && (!attends || score_used == nn::StepScore::multihead))
    throw ValueError(
        fmt::format("pointer needs bahdanau or luong attention with one head, got {} ({})", to_string(attention), s));
}

namespace {

struct Seq2SeqNames {
  std::string encoder, attention, score, coverage;  // score "": the attention's default
};
using Seq2SeqForm = detail::ConfigForm<Seq2SeqConfig, Seq2SeqNames>;

// The keys to_json always writes, each with its field.
std::vector<detail::ConfigField> written(Seq2SeqForm& f) {
  return {{"encoder", &f.names.encoder},
          {"layers", &f.c.layers},
          {"bidirectional", &f.c.bidirectional},
          {"emb", &f.c.emb},
          {"hidden", &f.c.hidden},
          {"dropout", &f.c.dropout},
          {"attention", &f.names.attention},
          {"score", &f.names.score},
          {"input_feeding", &f.c.input_feeding},
          {"vocab", &f.c.vocab},
          {"max_src_len", &f.c.max_src_len},
          {"heads", &f.c.heads},
          {"window", &f.c.window},
          {"location_filters", &f.c.location_filters},
          {"location_width", &f.c.location_width},
          {"location_sharpening", &f.c.location_sharpening},
          {"location_smoothing", &f.c.location_smoothing},
          {"seed", &f.c.seed}};
}

void parse_names(Seq2SeqConfig& c, const Seq2SeqNames& names) {
  check_config_bounds(c);  // first, as validate() does
  c.encoder = parse_rnn_cell(names.encoder);
  c.attention = parse_attention_kind(names.attention);
  c.score = parse_score(c.attention, names.score);
  c.coverage = parse_coverage_kind(names.coverage);
}

}  // namespace

nlohmann::json Seq2SeqConfig::to_json() const {
  Seq2SeqForm form{*this, {to_string(encoder), to_string(attention), score_name(), to_string(coverage)}, {}};
  nlohmann::json j = detail::write_config(written(form));
  if (coverage != CoverageKind::none) {  // checkpoints without coverage keep the older form
    j["coverage"] = form.names.coverage;
    j["coverage_loss"] = coverage_loss;
  }
  detail::write_normalizer(j, normalizer);
  if (pointer) j["pointer"] = true;  // likewise for checkpoints without the pointer
  const Seq2SeqConfig defaults;      // the fields below only when set: older checkpoints keep their form
  if (monotonic_bias != defaults.monotonic_bias) j["monotonic_bias"] = monotonic_bias;
  if (monotonic_noise != defaults.monotonic_noise) j["monotonic_noise"] = monotonic_noise;
  if (chunk != defaults.chunk) j["chunk"] = chunk;
  return j;
}

Seq2SeqConfig Seq2SeqConfig::from_json(const nlohmann::json& j) {
  Seq2SeqForm form;
  form.names = {to_string(form.c.encoder), to_string(form.c.attention), "", to_string(form.c.coverage)};
  // The keys to_json writes only when set, then the normaliser's: newer, so last.
  detail::read_config("seq2seq", j,
                      detail::joined({written(form),
                                      {{"coverage", &form.names.coverage},
                                       {"coverage_loss", &form.c.coverage_loss},
                                       {"pointer", &form.c.pointer},
                                       {"monotonic_bias", &form.c.monotonic_bias},
                                       {"monotonic_noise", &form.c.monotonic_noise},
                                       {"chunk", &form.c.chunk}},
                                      form.normalizer.fields()}));
  return form.parsed();
}

std::string Seq2SeqConfig::to_json_string() const { return to_json().dump(); }

Seq2SeqConfig Seq2SeqConfig::from_json_string(const std::string& text) {
  nlohmann::json j;
  try {
    j = parse_json(text, "seq2seq config");
  } catch (const IoError& e) {
    throw ValueError(e.what());
  }
  return from_json(j);
}

}  // namespace attn::models
