#pragma once
// The attention of one RNN decoder step (models::Decoder, attn/models/seq2seq.h): one module
// per score function behind the StepAttention interface, chosen once from the configuration
// by make_step_attention; the decoder then calls prepare() once per batch and step() once per
// output position, with no dispatch on names.
//
//   auto attention = nn::make_step_attention({.score = nn::StepScore::additive,
//                                             .query_size = D, .memory_size = E}, rng);
//   nn::StepMemory memory = attention->prepare(encoder_outputs, src_lengths);  // keys projected once
//   nn::StepState state = attention->start(memory);                           // per sequence
//   nn::StepAttentionResult r = attention->step(s_t, memory, state, /*need_weights=*/true);
//
// State that a score carries from one step to the next (coverage, the previous alignment, a
// monotonic selection) lives in the StepState, never in the module: start() makes it for a
// batch, every step() advances it, and beam search reorders it with its hypotheses.
//
// Modules (parameters as named in checkpoints, "decoder.attention.<name>"; A = D; each draws
// its parameters from the given Rng in the order listed, Xavier as attn/nn/attention_init.h):
//   AdditiveAttention      additive | additive_normalized: Bahdanau, additive_attention
//                          (attn/ops/attention.h); w_q (A, D), w_k (A, E), bias (A), v (A) [, g]
//                          [, w_c (A), zeros: with coverage] [, w_f (1, E), zeros: tu]. With
//                          coverage the state holds c_t (B, S), zeros at the start; step t scores
//                          vᵀ tanh(W_q s + W_k h_i + w_c c_{t,i} + b) (ops/coverage.h's add_outer
//                          on the projected keys) and only then adds its own attention to c: a
//                          step never sees its own attention in its coverage.
//                          see (See et al. 2017): c_t = Σ_{t'<t} a_{t'}; the step reports
//                          Σ_i min(a_{t,i}, c_{t,i}) as its coverage_loss.
//                          tu (Tu et al. 2016, linguistic coverage with fertility): c_t =
//                          Σ_{t'<t} a_{t'} / Φ with Φ_i = N σ(w_f · h_i), N = 2, computed once per
//                          batch by prepare(); no coverage loss.
//   LuongAttention         dot | general | concat: luong_attention (attn/ops/attention.h);
//                          general w (D, E); concat w (A, D + E), v (A)
//   LocationAttention      location: location_attention; w_a (S_max, D), b_a (S_max)
//   LocationAwareAttention location_aware: Chorowski et al. 2015, location_aware_attention
//                          (attn/ops/attention.h); w_q (A, D), w_k (A, E), bias (A), v (A),
//                          filters (K, r), w_loc (A, K). Its state holds the previous
//                          alignment a_{t−1} (B, S), uniform over each row's real positions at
//                          the start (as ESPnet's AttLoc), so beam search reorders it.
//   MonotonicAttention     monotonic | mocha: Raffel et al. 2017 / Chiu & Raffel 2018
//                          (attn/ops/monotonic.h); w_q (A, D), w_k (A, E), bias (A), v (A),
//                          r (1) = monotonic_bias [, mocha: chunk_w_q (A, D), chunk_w_k (A, E),
//                          chunk_bias (A), chunk_v (A)]. In training the expected alignment,
//                          its state α_{i−1} (B, S), δ_0 at the start; Gaussian noise of
//                          std monotonic_noise on the selection energies. In eval mode hard
//                          online attention: its state is the position (B) it reads from (0 at
//                          the start), a step stops at the first position with p > 0.5 (mocha:
//                          softmax over the chunk of width W ending there), scoring only the
//                          frames it reads (monotonic_online_step: O(T + U) frame visits per
//                          output; weights, zero outside the chunk, only when asked for); a
//                          step that reads to the end without stopping has a zero context, and
//                          the step after it reports the row as exhausted (the decoder then
//                          ends the output with EOS).
//   ScaledDotAttention     scaled_dot: sdpa (attn/ops/sdpa.h) of one query, keys = values (D = E)
//   MultiheadStepAttention multihead: nn::MultiheadAttention(D, H, kdim = vdim = E) with separate
//                          projections; q_proj_weight (D, D), k_proj_weight (D, E),
//                          v_proj_weight (D, E), in_proj_bias (3D), out_proj (D, D); keys and
//                          values projected once per batch; context size D, weights per head
//   LocalAttention         local_m | local_p: local_attention (attn/ops/local_attention.h) with
//                          the general score; local_m aligns p_t = min(t, L_b − 1), local_p
//                          predicts p_t; w (D, E) [, w_p (A, D), v_p (A)]
//   HardAttention          hard: the general score's distribution, one source position sampled
//                          per step in training (the argmax in eval mode) by
//                          hard_attention_sample (attn/ops/hard_attention.h); w (D, E). Its
//                          result carries log π(k) of the sample for REINFORCE.
// Shapes: query (B, D), values (B, S, E), lengths int32 (B) in [1, S]; the context is
// (B, context_size()), the weights (B, weight_heads() · S).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attn/nn/decoding_state.h"
#include "attn/nn/module.h"
#include "attn/nn/multihead_attention.h"
#include "attn/ops/attention.h"
#include "attn/random.h"
#include "attn/tensor.h"

namespace attn::nn {

// Coverage of the additive scores (the configuration's `coverage`).
enum class StepCoverage { none, see, tu };
inline constexpr float kTuFertilityMax = 2.0f;  // Tu et al.'s N: the most target words one source word yields

// The score functions of the decoder's attention (the configuration's `score`).
enum class StepScore {
  additive,             // Bahdanau
  additive_normalized,  // Bahdanau, normed v (TF normalize=True)
  dot,
  general,
  concat,
  location,
  scaled_dot,
  multihead,
  local_m,
  local_p,
  hard,
  location_aware,  // Chorowski et al. 2015: additive with a convolution of the previous alignment
  monotonic,       // Raffel et al. 2017: hard monotonic attention, trained on its expected alignment
  mocha,           // Chiu & Raffel 2018: monotonic chunkwise attention
};
// The configuration name ("additive", "local_m", ...), as checkpoints store it.
const char* step_score_name(StepScore score);
// The score called `name`, or nullopt.
std::optional<StepScore> find_step_score(const std::string& name);

struct StepAttentionOptions {
  StepScore score = StepScore::general;
  int64_t query_size = 0;    // D, the decoder state
  int64_t memory_size = 0;   // E, the encoder outputs
  int64_t heads = 1;         // multihead: H, dividing D
  int64_t window = 0;        // local_m / local_p: half-width of the window
  int64_t max_src_len = 0;   // location: the longest source it scores
  uint64_t sample_seed = 0;  // hard: the stream of its draws
  // location_aware: K filters of odd width r (ESPnet's AttLoc: 10 channels, aconv_filts 100,
  // i.e. width 2·100 + 1 = 201), sharpening β, smoothing.
  int64_t location_filters = 10;
  int64_t location_width = 201;
  float location_sharpening = 1.0f;
  bool location_smoothing = false;
  StepCoverage coverage = StepCoverage::none;  // additive scores only (AdditiveAttention)
  // The normaliser of the scores (attn/ops/softmax.h): softmax, or sparsemax / entmax15 /
  // entmax(α) for the additive, Luong (dot, general, concat), location and location-aware
  // scores; ValueError for any other score, for α <= 1 or NaN, and with location smoothing.
  Normalizer normalizer{};
  // monotonic / mocha: the initial offset r of the selection energy (Raffel et al.: −4, so that
  // the attention starts by reading on), the std of the Gaussian noise added to those energies
  // in training (the paper's 1; 0: none); mocha: the chunk width W (sample_seed draws the noise).
  float monotonic_bias = -4.0f;
  float monotonic_noise = 1.0f;
  int64_t chunk = 2;
};

// One batch's attention memory: the values and what prepare() computed once for every step.
struct StepMemory {
  Tensor values;             // (B, S, E)
  Tensor lengths;            // (B) int32
  Tensor keys;               // additive: values W_kᵀ (B, S, A); multihead (B, H, S, Dh); scaled_dot (B, 1, S, E)
  Tensor projected_values;   // multihead (B, H, S, Dh); scaled_dot (B, 1, S, E)
  Tensor inverse_fertility;  // additive with tu coverage: 1 / Φ_i (B, S)
};

struct StepAttentionResult {
  Tensor context{};        // (B, context_size())
  Tensor weights{};        // (B, weight_heads() · S), head-major; when asked for (hard: always)
  Tensor log_prob{};       // hard attention in training: log π(k) of the sampled position (B); else undefined
  Tensor coverage_loss{};  // coverage: Σ_i min(a_{t,i}, c_{t,i}) with c_t before this step (B); else undefined
  Tensor exhausted{};      // online attention in eval mode: int32 (B), 1 where an earlier step read to the end
                           // of the input without stopping, nothing is left (the output ends); else undefined
};

// The per-sequence state of a decoder's attention, carried from one step to the next.
struct StepState final : DecodingState {
  StepState() = default;
  StepState(int64_t t_, std::vector<Tensor> rows_) : t(t_), rows(std::move(rows_)) {}
  int64_t t = 0;             // the index of the step about to be taken (0-based); local_m aligns with it
  std::vector<Tensor> rows;  // the module's own, each (B, ...): row b belongs to sequence b
  // Beam search: row i of every tensor becomes row index[i] of the old one; index int32 (B').
  void reorder(const Tensor& index) override;
};

class StepAttention {
 public:
  virtual ~StepAttention() = default;
  // The module that holds the parameters (the decoder registers it as "attention").
  virtual Module& module() = 0;
  // Once per batch: values (B, S, E), lengths (B) int32.
  virtual StepMemory prepare(const Tensor& values, const Tensor& lengths) const {
    return {values, lengths, {}, {}, {}};
  }
  // At the start of decoding a batch: its sequences' state (only t for a score without one).
  virtual StepState start(const StepMemory& memory) const { return {}; }
  // query (B, D) at step state.t; advances the state to the next step.
  StepAttentionResult step(const Tensor& query, const StepMemory& memory, StepState& state, bool need_weights) {
    StepAttentionResult r = attend(query, memory, state, need_weights);
    ++state.t;
    return r;
  }
  virtual int64_t context_size() const = 0;
  virtual int64_t weight_heads() const { return 1; }
  // The normaliser of the scores (make_step_attention's options.normalizer).
  const Normalizer& normalizer() const { return normalizer_; }
  // True for attention that reads the source left to right and stops (monotonic, mocha): in
  // eval mode a step's weights end at the last frame it has read, and are zero past it.
  virtual bool online() const { return false; }

 protected:
  friend std::unique_ptr<StepAttention> make_step_attention(const StepAttentionOptions& options, Rng& rng);
  Normalizer normalizer_;
  // One step at state.t; a module with state of its own updates state.rows here.
  virtual StepAttentionResult attend(const Tensor& query, const StepMemory& memory, StepState& state,
                                     bool need_weights) = 0;
};

// The module of options.score (ValueError for sizes < 1 or heads not dividing D).
std::unique_ptr<StepAttention> make_step_attention(const StepAttentionOptions& options, Rng& rng);

// The base of every module but multihead: it holds its own parameters and its context is a
// mix of the values (E features).
class SingleHeadStepAttention : public Module, public StepAttention {
 public:
  Module& module() override { return *this; }
  int64_t context_size() const override { return memory_size_; }

 protected:
  explicit SingleHeadStepAttention(int64_t memory_size) : memory_size_(memory_size) {}

 private:
  int64_t memory_size_;
};

class AdditiveAttention final : public SingleHeadStepAttention {
 public:
  AdditiveAttention(int64_t D, int64_t E, bool normalize, StepCoverage coverage, Rng& rng);
  StepMemory prepare(const Tensor& values, const Tensor& lengths) const override;
  StepState start(const StepMemory& memory) const override;
  StepAttentionResult attend(const Tensor& query, const StepMemory& memory, StepState& state,
                             bool need_weights) override;

  Tensor w_q, w_k, bias, v, g;  // g: additive_normalized only
  Tensor w_c;                   // coverage only
  Tensor w_f;                   // tu coverage only

 private:
  bool normalize_;
  StepCoverage coverage_;
};

class LuongAttention final : public SingleHeadStepAttention {
 public:
  // score: dot | general | concat.
  LuongAttention(StepScore score, int64_t D, int64_t E, Rng& rng);
  StepAttentionResult attend(const Tensor& query, const StepMemory& memory, StepState& state,
                             bool need_weights) override;

  Tensor w, v;  // general: w; concat: w, v; dot: none

 private:
  LuongScore score_;
};

class LocationAttention final : public SingleHeadStepAttention {
 public:
  LocationAttention(int64_t D, int64_t E, int64_t max_src_len, Rng& rng);
  StepAttentionResult attend(const Tensor& query, const StepMemory& memory, StepState& state,
                             bool need_weights) override;

  Tensor w_a, b_a;
};

class LocationAwareAttention final : public SingleHeadStepAttention {
 public:
  LocationAwareAttention(int64_t D, int64_t E, const StepAttentionOptions& options, Rng& rng);
  StepMemory prepare(const Tensor& values, const Tensor& lengths) const override;
  StepState start(const StepMemory& memory) const override;  // rows[0]: a_0 (B, S)
  StepAttentionResult attend(const Tensor& query, const StepMemory& memory, StepState& state,
                             bool need_weights) override;

  Tensor w_q, w_k, bias, v, filters, w_loc;

 private:
  float sharpening_;
  bool smoothing_;
};

class MonotonicAttention final : public SingleHeadStepAttention {
 public:
  // chunk: 0 for monotonic, W >= 1 for mocha.
  MonotonicAttention(int64_t D, int64_t E, int64_t chunk, const StepAttentionOptions& options, Rng& rng);
  StepMemory prepare(const Tensor& values,
                     const Tensor& lengths) const override;  // projected_values: mocha's chunk keys
  StepState start(const StepMemory& memory) const override;  // rows[0]: training δ_0 (B, S); eval the position (B)
  StepAttentionResult attend(const Tensor& query, const StepMemory& memory, StepState& state,
                             bool need_weights) override;
  bool online() const override { return true; }

  Tensor w_q, w_k, bias, v, r;
  Tensor chunk_w_q, chunk_w_k, chunk_bias, chunk_v;  // mocha only

 private:
  StepAttentionResult expected(const Tensor& query, const StepMemory& memory, StepState& state);
  StepAttentionResult online(const Tensor& query, const StepMemory& memory, StepState& state, bool need_weights);
  Tensor chunk_energy(const Tensor& query, const StepMemory& memory) const;

  int64_t chunk_;
  float noise_;
  Rng noise_rng_;
};

class ScaledDotAttention final : public SingleHeadStepAttention {
 public:
  explicit ScaledDotAttention(int64_t E) : SingleHeadStepAttention(E) {}
  StepMemory prepare(const Tensor& values, const Tensor& lengths) const override;
  StepAttentionResult attend(const Tensor& query, const StepMemory& memory, StepState& state,
                             bool need_weights) override;
};

class MultiheadStepAttention final : public StepAttention {
 public:
  MultiheadStepAttention(int64_t D, int64_t E, int64_t heads, Rng& rng);
  Module& module() override { return mha; }
  StepMemory prepare(const Tensor& values, const Tensor& lengths) const override;
  StepAttentionResult attend(const Tensor& query, const StepMemory& memory, StepState& state,
                             bool need_weights) override;
  int64_t context_size() const override { return mha.options().embed_dim; }
  int64_t weight_heads() const override { return mha.options().num_heads; }

  MultiheadAttention mha;
};

class LocalAttention final : public SingleHeadStepAttention {
 public:
  // predictive: local_p, else local_m.
  LocalAttention(bool predictive, int64_t D, int64_t E, int64_t window, Rng& rng);
  StepAttentionResult attend(const Tensor& query, const StepMemory& memory, StepState& state,
                             bool need_weights) override;

  Tensor w, w_p, v_p;  // w_p, v_p: local_p only

 private:
  int64_t window_;
  bool predictive_;
};

class HardAttention final : public SingleHeadStepAttention {
 public:
  HardAttention(int64_t D, int64_t E, uint64_t sample_seed, Rng& rng);
  StepAttentionResult attend(const Tensor& query, const StepMemory& memory, StepState& state,
                             bool need_weights) override;

  Tensor w;

 private:
  Rng sample_rng_;
};

}  // namespace attn::nn
