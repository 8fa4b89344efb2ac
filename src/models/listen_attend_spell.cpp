// Listen, attend and spell: the pyramidal BiLSTM listener and the speller (models::Decoder).
#include "attn/models/listen_attend_spell.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "attn/autodiff/tape.h"
#include "attn/error.h"
#include "attn/models/memory_estimate.h"
#include "attn/ops/loss.h"
#include "attn/ops/select.h"
#include "attn/ops/shape_ops.h"
#include "config_json.h"
#include "rnn_decoding.h"

namespace attn::models {

// ---- AsrConfig ------------------------------------------------------------------------------

Seq2SeqConfig AsrConfig::default_speller() {
  Seq2SeqConfig c;
  c.encoder = RnnCell::lstm;
  c.emb = 64;
  c.hidden = 256;
  c.attention = AttentionKind::bahdanau;
  return c;
}

int AsrConfig::pyramid_layers() const {
  int layers = 0;
  for (int r = reduction; r > 1; r /= 2) ++layers;
  return layers;
}

int64_t AsrConfig::encoded_length(int64_t frames) const { return (frames + reduction - 1) / reduction; }

void AsrConfig::validate() const {
  auto within = [](const char* name, int value, int lo, int hi) {
    if (value < lo || value > hi)
      throw ValueError(fmt::format("asr config: {} must be in [{}, {}], got {}", name, lo, hi, value));
  };
  within("bins", bins, 1, 4096);
  within("projection", projection, 1, 16384);
  within("listener_hidden", listener_hidden, 1, 16384);
  if (reduction != 2 && reduction != 4 && reduction != 8)
    throw ValueError(fmt::format("asr config: reduction must be 2, 4 or 8, got {}", reduction));
  speller.validate();
  if (speller.attention == AttentionKind::none)
    throw ValueError("asr config: the speller needs attention (bahdanau or luong), got none");
  if (speller.pointer) throw ValueError("asr config: the speller has no source tokens to copy: pointer must be off");
  if (speller.coverage != CoverageKind::none)
    throw ValueError("asr config: coverage is not supported by the speller, got '" +
                     std::string(to_string(speller.coverage)) + "'");
  if (speller.step_score() == nn::StepScore::hard)
    throw ValueError("asr config: hard attention is not supported by the speller (its REINFORCE term is Seq2Seq's)");
}

nlohmann::json AsrConfig::to_json() const {
  return {{"bins", bins},
          {"projection", projection},
          {"listener_hidden", listener_hidden},
          {"reduction", reduction},
          {"speller", speller.to_json()}};
}

AsrConfig AsrConfig::from_json(const nlohmann::json& j) {
  AsrConfig c;
  nlohmann::json top = j;
  if (top.is_object() && top.contains("speller")) {
    c.speller = Seq2SeqConfig::from_json(top.at("speller"));
    top.erase("speller");
  }
  detail::read_config("asr", top,
                      {{"bins", &c.bins},
                       {"projection", &c.projection},
                       {"listener_hidden", &c.listener_hidden},
                       {"reduction", &c.reduction}});
  c.validate();
  return c;
}

// ---- batches --------------------------------------------------------------------------------

SpeechBatch pack_speech(const std::vector<std::span<const float>>& frames, int bins, const IdRows& targets) {
  if (frames.empty()) throw ValueError("pack_speech: expected at least one utterance, got none");
  if (!targets.empty() && targets.size() != frames.size())
    throw ValueError(fmt::format("pack_speech: {} utterances but {} targets", frames.size(), targets.size()));
  const int64_t B = static_cast<int64_t>(frames.size()), F = bins;
  int64_t S = 0;
  for (size_t b = 0; b < frames.size(); ++b) {
    if (frames[b].empty() || frames[b].size() % static_cast<size_t>(F) != 0)
      throw ValueError(fmt::format("pack_speech: utterance {} has {} values, not a positive multiple of {} bins", b,
                                   frames[b].size(), F));
    S = std::max<int64_t>(S, static_cast<int64_t>(frames[b].size()) / F);
  }
  SpeechBatch batch;
  batch.features = Tensor::zeros({B, S, F});       // (B, S, F)
  batch.lengths = Tensor::empty({B}, DType::i32);  // (B)
  for (int64_t b = 0; b < B; ++b) {
    const std::span<const float>& f = frames[static_cast<size_t>(b)];
    std::copy(f.begin(), f.end(), batch.features.f32() + b * S * F);
    batch.lengths.i32()[b] = static_cast<int32_t>(static_cast<int64_t>(f.size()) / F);
  }
  if (!targets.empty()) {
    const Batch t = pack_pairs(targets, targets);  // its target half: BOS + characters, characters + EOS
    batch.tgt_in = t.tgt_in;
    batch.tgt_out = t.tgt_out;
    batch.tgt_lengths = t.tgt_lengths;
  }
  return batch;
}

// ---- Listener -------------------------------------------------------------------------------

Listener::Listener(const AsrConfig& config, Rng& rng)
    : input(config.bins, config.projection, rng),
      config_(config),
      dropout_(config.speller.dropout, splitmix64(config.speller.seed ^ 0x115E7E2ULL)) {
  register_module("input", input);
  const int64_t H = config.listener_hidden;
  for (int k = 0; k <= config.pyramid_layers(); ++k) {
    const int64_t in = k == 0 ? config.projection : 4 * H;  // a pyramid layer reads two frames of 2H
    blstm.push_back(std::make_unique<RnnStack>(true, in, H, 1, true, rng));
    register_module("blstm" + std::to_string(k), *blstm.back());
  }
  register_module("dropout", dropout_);
}

EncoderOutput Listener::forward(const Tensor& features, const Tensor& lengths, Tensor& encoded_lengths) {
  ShapeContract contract("Listener");
  contract.bind("F", config_.bins)
      .check("features", features, {"B", "S", "F"}, DType::f32)
      .check("lengths", lengths, {"B"}, DType::i32);
  const int64_t B = features.dim(0);
  check_lengths_in_range("Listener", "lengths", lengths, features.dim(1));
  Tensor x = input.forward(transpose_01(features));  // (S, B, P)
  Tensor len = lengths;
  for (size_t k = 0; k < blstm.size(); ++k) {
    if (k > 0) {
      x = dropout_.forward(pair_frames(x));  // (⌈S/2⌉, B, 4H)
      Tensor halved = Tensor::empty({B}, DType::i32);
      for (int64_t b = 0; b < B; ++b) halved.i32()[b] = (len.i32()[b] + 1) / 2;
      len = halved;
    }
    Tensor keep;
    std::vector<char> all_kept;
    packed_keep_masks(len, x.dim(0), keep, all_kept);
    x = run_rnn_stack(*blstm[k], x, keep, all_kept).outputs;  // (S_k, B, 2H), zero past each length
  }
  encoded_lengths = len;
  EncoderOutput result;
  result.outputs = transpose_01(x);  // (B, S', 2H)
  const Seq2SeqConfig& s = config_.speller;
  for (int l = 0; l < s.layers; ++l) {
    result.h.push_back(Tensor::zeros({B, s.hidden}));
    if (s.encoder == RnnCell::lstm) result.c.push_back(Tensor::zeros({B, s.hidden}));
  }
  return result;
}

// ---- ListenAttendSpell ----------------------------------------------------------------------

namespace {
const AsrConfig& validated(const AsrConfig& c) {
  c.validate();
  check_parameter_memory(c.speller);
  return c;
}
}  // namespace

ListenAttendSpell::ListenAttendSpell(const AsrConfig& config)
    : config_(validated(config)),
      rng_(config.speller.seed),
      listener(config_, rng_),
      speller(config_.speller, 2 * int64_t{config_.listener_hidden}, rng_) {
  register_module("listener", listener);
  register_module("speller", speller);
}

Tensor ListenAttendSpell::loss(const SpeechBatch& batch, float label_smoothing) {
  ShapeContract contract("ListenAttendSpell");
  contract.check("tgt_in", batch.tgt_in, {"B", "T"}, DType::i32)
      .check("tgt_out", batch.tgt_out, {"B", "T"}, DType::i32);
  check_training_memory(config_.speller, batch.features.dim(0), config_.encoded_length(batch.features.dim(1)),
                        batch.tgt_out.dim(1));
  Tensor encoded_lengths;
  const EncoderOutput enc = listener.forward(batch.features, batch.lengths, encoded_lengths);
  const DecoderOutput out = speller.forward(batch.tgt_in, enc, encoded_lengths);
  return cross_entropy(out.logits, time_major_ids(batch.tgt_out),
                       {.ignore_index = kPad, .label_smoothing = label_smoothing});
}

DecodeResult ListenAttendSpell::greedy(const Tensor& features, const Tensor& lengths, int max_len) {
  if (max_len < 1) throw ValueError("greedy: max_len must be >= 1, got " + std::to_string(max_len));
  check_decoding_memory(config_.speller, features.dim(0), config_.encoded_length(features.dim(1)), max_len);
  autodiff::NoGradGuard no_grad;
  Tensor encoded_lengths;
  const EncoderOutput enc = listener.forward(features, lengths, encoded_lengths);
  return detail::greedy_decode(speller, config_.speller, enc, encoded_lengths, max_len);
}

DecodeResult ListenAttendSpell::beam(const Tensor& features, const Tensor& lengths, const BeamOptions& options) {
  ShapeContract contract("ListenAttendSpell");
  contract.bind("F", config_.bins).check("features", features, {"B", "S", "F"}, DType::f32);
  contract.check("lengths", lengths, {"B"}, DType::i32);
  const int64_t B = features.dim(0), S = config_.encoded_length(features.dim(1));
  const int64_t W = speller.attention->weight_heads() * S;  // weights per row and step
  autodiff::NoGradGuard no_grad;
  Tensor encoded_lengths = Tensor::empty({B}, DType::i32);  // the search's source lengths, before encoding
  for (int64_t b = 0; b < B; ++b)
    encoded_lengths.i32()[b] = static_cast<int32_t>(config_.encoded_length(lengths.i32()[b]));
  detail::BeamSearch search("beam", B, options, W, detail::beam_source(encoded_lengths, S));
  check_decoding_memory(config_.speller, search.rows(), S, options.max_len);
  const EncoderOutput enc = listener.forward(features, lengths, encoded_lengths);
  return detail::beam_decode(speller, config_.speller, search, options.width, options.max_len, enc, encoded_lengths);
}

}  // namespace attn::models
