#pragma once
// RNN encoder-decoders with attention (Bahdanau et al. 2014, Luong et al. 2015) and the
// fixed-context baseline (Cho et al. 2014 / Sutskever et al. 2014), with greedy and beam
// decoding.
//
//   Seq2SeqConfig cfg{.attention = AttentionKind::bahdanau};
//   Seq2Seq model(cfg);
//   Tensor loss = model.loss(batch);                    // teacher forcing, mean CE (+ REINFORCE for hard, + coverage)
//   Seq2Seq::Loss terms = model.loss_terms(batch);     // the same with its cross-entropy and logits
//   DecodeResult r = model.greedy(src, src_lengths, 80);
//
// Encoder: embedding -> GRU/LSTM, 1..N layers, uni- or bidirectional (E = 2H when
// bidirectional), packed semantics (padding never changes a result: rows whose length is
// exceeded keep their state, the backward direction starts at each row's last real token,
// outputs at padded positions are 0). Decoder (D = H), selected by config.attention (AttentionKind):
//   none      s_t = RNN(emb(y_{t-1}), s_{t-1});                  logits = W_o s_t
//   bahdanau  c_t = attend(s_{t-1}); s_t = RNN([emb(y_{t-1}); c_t], s_{t-1});
//             logits = W_o [s_t; c_t; emb(y_{t-1})]
//   luong     s_t = RNN([emb(y_{t-1}); h̃_{t-1}], s_{t-1}) (input feeding; emb only without);
//             c_t = attend(s_t); h̃_t = tanh(W_c [c_t; s_t]);     logits = W_o h̃_t
// Parameter names follow PyTorch modules: "encoder.embedding.weight",
// "encoder.rnn.weight_ih_l0", "encoder.rnn.weight_hh_l0_reverse", "encoder.bridge.h_l0.weight",
// "decoder.embedding.weight", "decoder.rnn.weight_ih_l0", "decoder.attention.w_q",
// "decoder.linear_out.weight", "decoder.out.weight", ...
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "attn/models/batch.h"
#include "attn/nn/layers.h"
#include "attn/nn/module.h"
#include "attn/nn/step_attention.h"
#include "attn/ops/hard_attention.h"
#include "attn/random.h"

namespace attn::models {

// The configuration's choices, parsed from their names once (the CLI's flags, the checkpoint
// JSON) and stored as enums; to_string gives back the name the JSON stores. The parsers throw
// ValueError naming the field and listing the valid values, e.g.
//   unknown attention 'foo' (valid: none, bahdanau, luong)
enum class RnnCell { gru, lstm };
const char* to_string(RnnCell cell);                 // "gru" | "lstm"
RnnCell parse_rnn_cell(const std::string& name);     // "unknown encoder '...'"
enum class AttentionKind { none, bahdanau, luong };  // the decoder (see the top of this file)
enum class CoverageKind { none, see, tu };           // See et al. (2017), Tu et al. (2016)
const char* to_string(CoverageKind kind);            // "none" | "see" | "tu"
nn::StepCoverage step_coverage(CoverageKind kind);
CoverageKind parse_coverage_kind(const std::string& name);    // "unknown coverage '...'"
const char* to_string(AttentionKind kind);                    // "none" | "bahdanau" | "luong"
AttentionKind parse_attention_kind(const std::string& name);  // "unknown attention '...'"
// The score of a decoder of kind `attention` called `name`: nullopt for "" (the kind's default)
// and for "none" with attention none. bahdanau: additive | additive_normalized |
// location_aware | monotonic | mocha; luong: dot |
// general | concat | location | scaled_dot | multihead | local_m | local_p | hard; e.g.
//   unknown score for bahdanau attention 'dot' (valid: additive, additive_normalized)
//   score 'general' given for attention 'none' (valid: none, or leave it empty)
std::optional<nn::StepScore> parse_score(AttentionKind attention, const std::string& name);

struct Seq2SeqConfig {
  RnnCell encoder = RnnCell::gru;
  int layers = 1;              // encoder and decoder layers
  bool bidirectional = false;  // encoder
  int emb = 64;
  int hidden = 256;      // H per encoder direction; decoder state D = H
  float dropout = 0.0f;  // between stacked RNN layers, in [0, 1)
  AttentionKind attention = AttentionKind::bahdanau;
  // The decoder's score; nullopt: the attention's default (bahdanau: additive, luong: general),
  // stored as "" in the JSON. validate() checks that it belongs to `attention` (parse_score).
  std::optional<nn::StepScore> score;
  int heads = 4;    // multihead: H, dividing hidden
  int window = 10;  // local_m / local_p: half-width D of the window [p_t - D, p_t + D]
  // location_aware (Chorowski et al. 2015; nn::LocationAwareAttention): K filters of odd width
  // r over the previous alignment, sharpening β (a = softmax(β e)), smoothing (σ for exp).
  int location_filters = 10;
  int location_width = 201;  // ESPnet AttLoc's aconv_filts 100: 2·100 + 1
  float location_sharpening = 1.0f;
  bool location_smoothing = false;
  bool input_feeding = true;  // luong only
  int vocab = 32;             // V: the synthetic tasks' (data::kVocabSize, tests/unit/tasks_test.cpp)
  int max_src_len = 128;      // the longest source location attention can score
  // Coverage (bahdanau's additive scores only; nn/step_attention.h): the attention of earlier
  // steps enters the score. see (See et al. 2017): c_t = Σ_{t'<t} a_{t'}, and training adds
  // coverage_loss · Σ_i min(a_{t,i}, c_{t,i}) per target token; tu (Tu et al. 2016): each step
  // adds a_t / Φ with a learned fertility Φ, no loss term. Stored in the JSON only when not none.
  CoverageKind coverage = CoverageKind::none;
  float coverage_loss = 1.0f;  // λ, >= 0
  // The normaliser of the decoder's attention scores (nn::StepAttentionOptions::normalizer):
  // softmax, or sparsemax / entmax15 / entmax with α > 1 for the scores that take one. Stored in
  // the JSON ("normalizer", "alpha") only when not softmax.
  Normalizer normalizer{};
  // The pointer-generator (See et al. 2017; models/pointer.h): each step mixes the vocabulary
  // distribution with the attention over the source, P(w) = p_gen P_vocab(w) + (1 − p_gen)
  // Σ_{i: src_i = w} a_i, p_gen = σ(w_cᵀ c_t + w_sᵀ s_t + w_xᵀ x_t + b), over the vocabulary
  // extended with the batch's source OOVs. bahdanau or luong with one attention head. Stored in
  // the JSON only when on.
  bool pointer = false;
  // monotonic / mocha (Raffel et al. 2017, Chiu & Raffel 2018; nn::MonotonicAttention): the
  // selection energy's initial offset r, the std of the noise on it in training (0: none), and
  // mocha's chunk width W >= 1. Stored in the JSON only when not the default.
  float monotonic_bias = -4.0f;
  float monotonic_noise = 1.0f;
  int chunk = 2;
  uint64_t seed = 1;

  // The score the decoder uses: `score`, or the attention type's default when unset
  // (additive for bahdanau, general for luong; unused for none).
  nn::StepScore step_score() const;
  // Its name ("additive", ...), "none" for attention none: for titles and reports.
  std::string effective_score() const;
  // The score's name as the JSON stores it ("" when unset).
  std::string score_name() const;
  // The choices' fit (parse_score) and the numeric fields; ValueError naming the bad field.
  void validate() const;
  // As a JSON object (every field, the choices by name); from_json accepts a subset (missing
  // fields keep their defaults), rejects unknown keys, wrong types and unknown names
  // (ValueError), and validates.
  nlohmann::json to_json() const;
  static Seq2SeqConfig from_json(const nlohmann::json& j);
  std::string to_json_string() const;  // for the checkpoint metadata key "attn"
  static Seq2SeqConfig from_json_string(const std::string& text);
};

struct DecodeResult {
  // Per batch row: the output ids, up to and including EOS (no EOS when max_len was hit).
  std::vector<std::vector<int32_t>> tokens;
  // Per row, per output step: the S attention weights over the row's source (S = the
  // batch's source length; positions past the row's length are 0). Empty for "none".
  std::vector<std::vector<std::vector<float>>> attention;
  // Beam search only (empty for greedy): per row, up to `width` finished hypotheses, best
  // first by length-normalised score (the first is tokens / attention above); the best
  // unfinished one alone when none reached EOS within max_len.
  struct Hypothesis {
    std::vector<int32_t> tokens;
    std::vector<std::vector<float>> attention;  // as `attention`, per output step
    float score = 0.0f;                         // log-prob / lp(length)
    std::vector<float> copy;                    // as `copy`, per output step
  };
  std::vector<std::vector<Hypothesis>> hypotheses;
  // The pointer-generator only (else empty): per row, per output step, the copy probability
  // 1 − p_gen of the step that emitted the token.
  std::vector<std::vector<float>> copy;
};

// When a source row's beam search stops (BeamSearch, src/models/beam_search.h):
//   bound  when no alive hypothesis can beat its best finished one any more (GNMT's bound;
//          the PyTorch peer's rule, so the same output);
//   top    at the step whose best candidate ends the sentence (EOS), as CTranslate2's beam
//          search does: fewer steps, an output that may differ.
enum class BeamStop { bound, top };
const char* to_string(BeamStop stop);               // "bound" | "top"
BeamStop parse_beam_stop(const std::string& name);  // "unknown beam stop '...' (valid: bound, top)"

// Whose beam search rules score and stop a sentence (BeamSearch, src/models/beam_search.h):
//   attn         GNMT's length normalisation raw / ((5 + len) / 6)^α, stopped by BeamStop;
//   ctranslate2  CTranslate2 4.8.5's BeamSearch (patience 1, min_decoding_length 1): raw / len^α;
//                no EOS at the first step; only an EOS among the step's best K candidates
//                finishes a hypothesis; a sentence stops once K hypotheses have finished
//                (α = 0: once the step's best candidate was EOS); at the last step the K best
//                all finish. Its output is CTranslate2's, in fewer steps than attn's rules.
enum class BeamRules { attn, ctranslate2 };
const char* to_string(BeamRules rules);               // "attn" | "ctranslate2"
BeamRules parse_beam_rules(const std::string& name);  // "unknown beam rules '...' (valid: attn, ctranslate2)"

struct BeamOptions {
  int width = 4;
  float length_penalty = 1.0f;  // α of GNMT's lp(len) = ((5 + len) / 6)^α; 0 = raw log-prob
  int max_len = 100;
  // β of GNMT's coverage penalty (Wu et al. 2016), added to a finished hypothesis's score:
  // cp = β Σ_{i < |X|} log(min(Σ_t a_{t,i}, 1)), summed over the source positions i (the
  // columns of its attention; padding left out), the attention averaged over heads and
  // floored at the smallest normal float before the log. 0: none. Needs attention weights.
  float coverage_penalty = 0.0f;
  BeamStop stop = BeamStop::bound;  // attn's rules only
  BeamRules rules = BeamRules::attn;
};

// A stack of GRU or LSTM layers with PyTorch nn.GRU / nn.LSTM parameter names
// (weight_ih_l{k}[_reverse], weight_hh_l{k}[_reverse], bias_ih_l{k}..., bias_hh_l{k}...).
class RnnStack : public nn::Module {
 public:
  RnnStack(bool lstm, int64_t input_size, int64_t hidden, int layers, bool bidirectional, Rng& rng);
  struct Weights {
    Tensor w_ih, w_hh, b_ih, b_hh;
  };
  const Weights& at(int layer, int direction) const { return weights_[layer * directions + direction]; }
  int64_t input_size(int layer) const;

  bool lstm;
  int64_t hidden;
  int layers;
  int directions;

 private:
  std::vector<Weights> weights_;
  int64_t input_size_;
};

// Runs every layer and direction of `rnn` over a time-major input with packed semantics
// (the recurrence of Encoder, reusable by classifiers):
//   input    (S, B, I) float32, I = rnn.input_size(0)
//   keep     (S, B) int32: 1 where step t of row b is real (t < length_b), else 0
//   all_kept per step t: 1 when every row is real at t (the fast path without row selection)
//   between  optional dropout applied to each layer's input from the second layer on
// Rows past their length keep their state and output 0; the backward direction starts at
// each row's last real token.
struct RnnStackOutput {
  Tensor outputs;            // (S, B, E) of the top layer, E = hidden · directions
  std::vector<Tensor> h, c;  // final states per layer and direction (index 2·l + d), (B, H); c: LSTM
};
RnnStackOutput run_rnn_stack(const RnnStack& rnn, const Tensor& input, const Tensor& keep,
                             const std::vector<char>& all_kept, nn::Dropout* between = nullptr);
// ValueError "<op>: '<arg>' value L at batch index b is out of range [1, S=..]" unless every
// length (B) int32 is in [1, S].
void check_lengths_in_range(const std::string& op, const std::string& arg, const Tensor& lengths, int64_t S);
// keep (S, B) and all_kept for lengths (B) int32 (see run_rnn_stack); lengths are trusted.
void packed_keep_masks(const Tensor& lengths, int64_t S, Tensor& keep, std::vector<char>& all_kept);

// The encoder's results, batch-major.
struct EncoderOutput {
  Tensor outputs;            // (B, S, E), zero at padded positions
  std::vector<Tensor> h, c;  // per layer (B, D): the decoder's initial state (c: LSTM only)
};

class Encoder : public nn::Module {
 public:
  Encoder(const Seq2SeqConfig& config, Rng& rng);
  // src (B, S) int32, src_lengths (B) int32 in [1, S].
  EncoderOutput forward(const Tensor& src, const Tensor& src_lengths);
  // The same from the source embeddings embedded (S, B, emb), time-major = embedding(src)
  // (attn explain differentiates with respect to them).
  EncoderOutput forward_embedded(const Tensor& embedded, const Tensor& src_lengths);
  int64_t output_size() const { return rnn.hidden * rnn.directions; }

  nn::Embedding embedding;
  RnnStack rnn;

 private:
  Seq2SeqConfig config_;
  std::unique_ptr<nn::Module> bridge_;  // bidirectional only
  std::vector<std::unique_ptr<nn::Linear>> bridge_h_, bridge_c_;
  nn::Dropout dropout_;
};

// Decoder state between steps (all (B, ·)).
struct DecoderState final : nn::DecodingState {
  std::vector<Tensor> h, c;  // per layer; c for LSTM
  Tensor feed;               // luong with input feeding: h̃_{t-1}
  nn::StepState attention;   // the attention's per-sequence state; attention.t is the next step's index
  // Beam search: row i of every part becomes row index[i] of the old state; index int32 (B').
  void reorder(const Tensor& index) override;
};

// Teacher forcing's results.
struct DecoderOutput {
  Tensor logits;  // (T, B, V), time-major
  Tensor
      hard_log_probs;  // hard attention in training: log π(k_t) of each step's sampled position (T, B); else undefined
  Tensor coverage_terms;  // coverage: Σ_i min(a_{t,i}, c_{t,i}) of each step (T, B); else undefined
};

// The decoder's attention is an nn::StepAttention (attn/nn/step_attention.h), built by
// nn::make_step_attention from the configuration's score and registered as "attention".
class Decoder : public nn::Module {
  // Declared first: the members below are built from it.
  Seq2SeqConfig config_;

 public:
  Decoder(const Seq2SeqConfig& config, int64_t encoder_size, Rng& rng);

  // One decoder step from the embedded previous token emb_prev (B, emb). Returns the
  // output features (B, F) for `out`, and the attention weights (B, S) if asked.
  struct Step {
    Tensor top;            // s_t (B, D)
    Tensor context;        // c_t (B, attention->context_size()), undefined for none
    Tensor feature;        // luong: h̃_t; none: s_t; bahdanau: undefined (see output_features)
    Tensor weights;        // (B, S) or multihead (B, H·S)
    Tensor log_prob;       // hard attention in training: (B)
    Tensor coverage_loss;  // coverage: Σ_i min(a_{t,i}, c_{t,i}) (B)
    Tensor p_gen;          // pointer: the generation probability σ(w_cᵀ c_t + w_sᵀ s_t + w_xᵀ x_t + b) (B)
    Tensor exhausted;      // online attention (monotonic, mocha) in eval mode: int32 (B), 1 = nothing left to read
  };
  Step step(const Tensor& emb_prev, DecoderState& state, const nn::StepMemory& memory, bool need_weights,
            const Tensor* projected_input = nullptr);
  // Logits (B, V) for one step. A row whose online attention has nothing left to read
  // (Step::exhausted: an earlier step read to the end without stopping) ends here: every
  // logit but EOS's is −1e9.
  Tensor step_logits(const Step& s, const Tensor& emb_prev) const;
  // The pointer-generator's log P (B, Vx) of one step over the extended vocabulary
  // (ops/pointer.h): src_ext (B, S) int32 the source in extended ids, Vx = extended_vocab.
  Tensor step_pointer_log_probs(const Step& s, const Tensor& emb_prev, const Tensor& src_ext,
                                int64_t extended_vocab) const;
  // Teacher forcing: tgt_in (B, T) -> logits (T, B, V) and hard attention's log-probabilities.
  // With the pointer, `logits` holds log P (T, B, Vx) over the extended vocabulary of src_ext
  // (B, S) and extended_vocab Vx (log-probabilities, so cross_entropy on them is their NLL).
  DecoderOutput forward(const Tensor& tgt_in, const EncoderOutput& enc, const Tensor& src_lengths,
                        const Tensor& src_ext = Tensor(), int64_t extended_vocab = 0);
  // The state before the first step; memory from prepare().
  DecoderState initial_state(const EncoderOutput& enc, const nn::StepMemory& memory, int64_t batch) const;
  // The attention memory of one batch (keys projected once); without attention, just the
  // encoder outputs and lengths.
  nn::StepMemory prepare(const EncoderOutput& enc, const Tensor& src_lengths) const;
  AttentionKind kind() const { return config_.attention; }

  nn::Embedding embedding;
  RnnStack rnn;
  std::unique_ptr<nn::StepAttention> attention;  // undefined for none
  std::unique_ptr<nn::Linear> linear_out;        // luong W_c
  // pointer: p_gen's [w_c; w_s; w_x] (1, context + D + emb) and b, "decoder.pointer_gate.weight"
  std::unique_ptr<nn::Linear> pointer_gate;
  nn::Linear out;
  ReinforceBaseline hard_baseline{0.9f};  // hard attention's REINFORCE baseline (Seq2Seq::loss)

 private:
  nn::Dropout dropout_;
};

class Seq2Seq : public nn::Module {
  // Declared first: the members below are built from them.
  Seq2SeqConfig config_;
  Rng rng_;

 public:
  explicit Seq2Seq(const Seq2SeqConfig& config);
  const Seq2SeqConfig& config() const { return config_; }

  // Teacher forcing for batch.tgt_in: logits (T, B, V), time-major, and hard attention's
  // log-probabilities (for the loss's REINFORCE term).
  DecoderOutput forward(const Batch& batch);
  // forward(batch).logits.
  Tensor logits(const Batch& batch);
  // The training objective, assembled here once: the mean cross-entropy over the non-PAD
  // target tokens (label smoothing ε), plus for hard attention in training mode the
  // REINFORCE surrogate: per step and row the reward is the log-likelihood of the target
  // token, r = −CE(t, b), against the moving-average baseline (decoder.hard_baseline,
  // updated after the loss with the mean reward; padded positions get zero advantage).
  struct Loss {
    Tensor loss;           // () what backward() takes: cross_entropy (+ the REINFORCE term, + coverage's)
    Tensor cross_entropy;  // () the mean cross-entropy alone (what a log reports)
    Tensor logits;         // (T, B, V), time-major
  };
  Loss loss_terms(const Batch& batch, float label_smoothing = 0.0f);
  // loss_terms(batch, label_smoothing).loss.
  Tensor loss(const Batch& batch, float label_smoothing = 0.0f);

  // One training step's forward and backward in row blocks, as greedy decoding runs: with
  // T threads and B >= 2·8 rows, up to T contiguous blocks of rows inside one parallel region,
  // one per thread, each through loss_terms() and backward() on its thread's tape by a replica
  // of this model (its weights, its own gradient buffers). Block b's loss is weighted by its
  // share of the batch's target tokens, N_b / N, so Σ_b of the replicas' gradients, added
  // into this model's parameters in block order (accumulating, as backward() does), is the
  // whole batch's gradient up to fp32 rounding. The values are the whole batch's: the loss,
  // the cross-entropy and, with_logits, the logits (T, B, V) (a copy: undefined without).
  // Returns nullopt and does nothing where it does not apply (one block; no gradients
  // recorded; a ready hook on this thread's tape, i.e. a data-parallel step, whose hook
  // must see backward run) or where a split would not be exact (training_splits_rows()).
  // A block's error is rethrown here before any gradient reaches this model.
  struct StepValues {
    double loss = 0.0;
    double cross_entropy = 0.0;
    Tensor logits;  // (T, B, V), time-major, with_logits only
    int64_t blocks = 0;
  };
  std::optional<StepValues> loss_backward_in_row_blocks(const Batch& batch, float label_smoothing = 0.0f,
                                                        bool with_logits = false);

  // Decoding runs without recording (NoGradGuard) and in eval mode is the caller's choice
  // (call eval() to switch dropout off). src (B, S), src_lengths (B); max_len >= 1.
  // With the pointer, src_ext (B, S) and extended_vocab give the source's OOV tokens their
  // extended ids (models/pointer.h); the outputs may then hold ids >= V (copied OOVs), fed back
  // to the decoder as kUnk. Undefined: the source itself, no OOVs.
  DecodeResult greedy(const Tensor& src, const Tensor& src_lengths, int max_len, const Tensor& src_ext = Tensor(),
                      int64_t extended_vocab = 0);
  DecodeResult beam(const Tensor& src, const Tensor& src_lengths, const BeamOptions& options,
                    const Tensor& src_ext = Tensor(), int64_t extended_vocab = 0);

  Encoder encoder;
  Decoder decoder;

 private:
  // ce plus, when out.hard_log_probs is defined and gradients are recorded, the REINFORCE
  // term above; otherwise ce itself.
  Tensor with_reinforce(const Tensor& ce, const DecoderOutput& out, const Batch& batch);
  // loss plus, with coverage, coverage_loss · the mean over target tokens (padding left out)
  // of Σ_i min(a_{t,i}, c_{t,i}) (See et al. 2017, eq. 13).
  Tensor with_coverage(const Tensor& loss, const DecoderOutput& out, const Batch& batch) const;

  std::vector<std::unique_ptr<Seq2Seq>> replicas_;  // loss_backward_in_row_blocks's, one per block
};

// Whether a training step of this configuration is the sum of its rows' (row blocks can
// train apart): nothing draws random numbers or keeps state across rows, i.e. no dropout
// between stacked layers, no hard attention (samples, and a REINFORCE baseline updated with
// the batch's mean reward), no noise in monotonic / MoChA attention.
bool training_splits_rows(const Seq2SeqConfig& config);

// The (T, B) time-major copy of a (B, T) int32 tensor.
Tensor time_major_ids(const Tensor& ids);
// ids (any shape) int32 with every id >= V replaced by kUnk: copied OOVs as decoder input.
Tensor in_vocabulary(const Tensor& ids, int64_t V);

}  // namespace attn::models
