#pragma once
// The data of `attn view`'s page for one input to a trained checkpoint (viz/html_view.h
// renders it; docs/viewer.md describes its fields): every attention the model computes on the
// input, per output hypothesis, layer and head. One builder per checkpoint kind behind one
// entry point, attention_view(), dispatched on decode::CheckpointKind:
//   seq2seq      the RNN's cross-attention of greedy and each beam hypothesis (a head per
//                multihead head; a coverage model also its running coverage)
//   translation  RNN: as seq2seq (the pointer-generator's copy probability on each row);
//                Transformer: encoder self (and its rollout), decoder self and cross, every
//                layer and head
//   lm           the character LM's causal self-attention (and its rollout)
//   classifier   the attention beside explain's importance measures, and transformer-cls'
//                self-attention (and its rollout)
//   asr          one utterance's alignment (characters × listener frames) per hypothesis, with
//                its log-mel spectrogram and, for online attention, each step's stopping frame
//                (explain/asr_alignment.h, what attn align draws)
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "attn/decode/checkpoint_kind.h"
#include "attn/explain/asr_alignment.h"

namespace attn::explain {

// One kind of attention (encoder self, cross, ...) of one input: per layer and head, a
// rows × cols matrix (rows: the queries, cols: the keys).
struct AttentionMap {
  std::string name;
  std::vector<std::string> rows, cols;
  int64_t layers = 0, heads = 0;
  std::vector<float> weights;  // (layers, heads, rows, cols)
};

struct ViewHypothesis {
  std::string name, text;
  nlohmann::json score;  // null for greedy
  std::vector<AttentionMap> maps;
  std::vector<float> copy = {};       // the pointer-generator: 1 − p_gen of each output token; else empty
  std::vector<float> coverage = {};   // a coverage model: Σ_t a_{t,i} of each source token; else empty
  std::vector<int> frames_read = {};  // ASR: the listener frames read before each output step; else empty
  std::vector<int64_t> stops = {};    // ASR with online attention: each step's stopping frame (−1: none); else empty
};

// An ASR view's utterance: its reference transcript and the log-mel features under the maps.
struct ViewSpeech {
  std::string utterance, reference;
  bool online = false;
  AsrSpectrogram spectrogram;
};

struct AttentionView {
  std::string model_kind, title, input;
  std::vector<ViewHypothesis> hypotheses = {};
  nlohmann::json classifier = {};  // the token shading (classifiers only); null for the other kinds
  std::vector<std::string> notes = {};
  std::optional<ViewSpeech> speech = {};  // ASR only
};

// What the page shows the model: a synthetic task's source symbols ("5 9 3"), an ASR model's
// utterance (decode::speech_utterance: the .speech file, the id, join) or the text of the other
// kinds, and the beam width (1: greedy only).
struct ViewInput {
  std::string symbols, text;
  int beam = 4;
  std::string speech, utterance;
  int join = 1;
};

// The view of the checkpoint at `path`, of `kind`. ValueError for an input the model cannot
// read (for ASR also decode::speech_utterance's refusals), a model without attention, or a kind
// view does not show (g2p); IoError for a file that does not load.
AttentionView attention_view(const std::string& path, decode::CheckpointKind kind, const ViewInput& input);

// The greedy alignment of `symbols` by each RNN seq2seq checkpoint of `models` (a sweep's), one
// hypothesis named after each model's folder; a model without attention gets a note instead,
// and a file of another kind is left out.
AttentionView sweep_alignments(const std::vector<std::string>& models, const std::vector<int32_t>& symbols);

// The page's form (packed weights, viz::pack_weights) or the raw export's (every weight as a
// number).
nlohmann::json view_json(const AttentionView& view, bool packed);

}  // namespace attn::explain
