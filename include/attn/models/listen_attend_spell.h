#pragma once
// Listen, attend and spell (Chan et al. 2016): a pyramidal BiLSTM listener over frames of
// features (log-mel energies) and, as the speller, the RNN decoder of seq2seq.h attending over
// the listener's outputs one character at a time.
//
//   AsrConfig cfg;
//   cfg.speller.vocab = characters.size();
//   cfg.speller.score = nn::StepScore::location_aware;
//   ListenAttendSpell model(cfg);
//   Tensor loss = model.loss(pack_speech(features, cfg.bins, targets));
//   DecodeResult r = model.greedy(batch.features, batch.lengths, 200);
//
// Listener, time-major inside:
//   x (S, B, F) -> input: Linear(F, P) -> blstm0: BiLSTM, H per direction -> (S, B, 2H)
//   then for k = 1 .. log2(reduction): pair_frames (adjacent frames joined, ⌈S/2⌉, B, 4H)
//   -> blstm{k}: BiLSTM -> (⌈S/2⌉, B, 2H)
//   outputs (B, S', E = 2H) with S' = ⌈S / reduction⌉ and each row's length ⌈L / reduction⌉: an
//   odd length's last frame is joined with the zeros of the padding, so padding never changes a
//   result. Dropout (speller.dropout) on the input of every BiLSTM but the first.
// Speller: models::Decoder with speller's configuration (cell, layers, emb, hidden D, attention
// and score: content (additive), location_aware, monotonic, mocha, or Luong's), E = 2H, starting
// from a zero state (ESPnet's choice): the attention alone carries the utterance.
// Parameter names: "listener.input.weight", "listener.blstm0.weight_ih_l0",
// "listener.blstm1.weight_hh_l0_reverse", ..., "speller.embedding.weight",
// "speller.rnn.weight_ih_l0", "speller.attention.w_q", "speller.out.weight".
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <vector>

#include "attn/models/batch.h"
#include "attn/models/seq2seq.h"
#include "attn/nn/layers.h"
#include "attn/nn/module.h"
#include "attn/random.h"

namespace attn::models {

struct AsrConfig {
  int bins = 80;                              // F: features per frame
  int projection = 256;                       // P: the input projection's size
  int listener_hidden = 256;                  // H per direction; E = 2H
  int reduction = 4;                          // 4 | 8 (2 | 4 | 8 valid): the listener's time reduction
  Seq2SeqConfig speller = default_speller();  // vocab: the characters (CharVocab::size())

  // The speller's defaults for ASR: an LSTM, bahdanau attention (additive score).
  static Seq2SeqConfig default_speller();
  // log2(reduction): the pyramid layers after blstm0.
  int pyramid_layers() const;
  // ⌈frames / reduction⌉: the listener's outputs for an utterance of `frames` frames.
  int64_t encoded_length(int64_t frames) const;
  // ValueError naming the bad field; the speller must not use the pointer-generator (no source
  // tokens to copy), hard attention or coverage.
  void validate() const;
  // {"bins", "projection", "listener_hidden", "reduction", "speller": Seq2SeqConfig's JSON};
  // from_json: missing fields keep their defaults, unknown keys are refused (ValueError).
  nlohmann::json to_json() const;
  static AsrConfig from_json(const nlohmann::json& j);
};

// A batch of utterances:
//   features     (B, S, F) float32, zero past each row's frames; S = the longest utterance
//   lengths      (B) int32 in [1, S]: each row's frames
//   tgt_in / tgt_out / tgt_lengths as models::Batch (BOS + characters, characters + EOS)
struct SpeechBatch {
  Tensor features, lengths;
  Tensor tgt_in, tgt_out, tgt_lengths;
};
// The batch of frames[b] (each frames × bins floats, row-major, at least one frame) and, when
// given, the targets[b] (character ids, at least one); ValueError for an utterance with no
// frames or a size that is not a multiple of bins.
SpeechBatch pack_speech(const std::vector<std::span<const float>>& frames, int bins, const IdRows& targets = {});

class Listener : public nn::Module {
 public:
  Listener(const AsrConfig& config, Rng& rng);
  // features (B, S, F) float32, lengths (B) int32 in [1, S] -> outputs (B, S', 2H) (zero past
  // each row's length) with zero initial decoder states (speller layers, (B, D)); encoded
  // lengths (B) int32 = ⌈lengths / reduction⌉.
  EncoderOutput forward(const Tensor& features, const Tensor& lengths, Tensor& encoded_lengths);

  nn::Linear input;
  std::vector<std::unique_ptr<RnnStack>> blstm;  // blstm0, then one per pyramid layer

 private:
  AsrConfig config_;
  nn::Dropout dropout_;
};

class ListenAttendSpell : public nn::Module {
  // Declared first: the members below are built from them.
  AsrConfig config_;
  Rng rng_;

 public:
  explicit ListenAttendSpell(const AsrConfig& config);
  const AsrConfig& config() const { return config_; }

  // The mean cross-entropy over the batch's non-PAD target characters (label smoothing ε).
  Tensor loss(const SpeechBatch& batch, float label_smoothing = 0.0f);
  // Decoding (no recording; eval mode is the caller's choice): features (B, S, F), lengths (B).
  // DecodeResult's attention rows are over the S' listener outputs.
  DecodeResult greedy(const Tensor& features, const Tensor& lengths, int max_len);
  DecodeResult beam(const Tensor& features, const Tensor& lengths, const BeamOptions& options);

  Listener listener;
  Decoder speller;
};

}  // namespace attn::models
