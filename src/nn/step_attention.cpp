// The decoder's step-attention modules and their factory (attn/nn/step_attention.h).
#include "attn/nn/step_attention.h"

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "attn/error.h"
#include "attn/nn/attention_init.h"
#include "attn/nn/init.h"
#include "attn/ops/coverage.h"
#include "attn/ops/elementwise.h"
#include "attn/ops/hard_attention.h"
#include "attn/ops/linear.h"
#include "attn/ops/local_attention.h"
#include "attn/ops/monotonic.h"
#include "attn/ops/sdpa.h"
#include "attn/ops/select.h"
#include "attn/ops/shape_ops.h"

namespace attn::nn {
namespace {

constexpr std::array<std::pair<StepScore, const char*>, 14> kScoreNames = {{
    {StepScore::additive, "additive"},
    {StepScore::additive_normalized, "additive_normalized"},
    {StepScore::dot, "dot"},
    {StepScore::general, "general"},
    {StepScore::concat, "concat"},
    {StepScore::location, "location"},
    {StepScore::scaled_dot, "scaled_dot"},
    {StepScore::multihead, "multihead"},
    {StepScore::local_m, "local_m"},
    {StepScore::local_p, "local_p"},
    {StepScore::hard, "hard"},
    {StepScore::location_aware, "location_aware"},
    {StepScore::monotonic, "monotonic"},
    {StepScore::mocha, "mocha"},
}};

LuongScore luong_score(StepScore score) {
  switch (score) {
    case StepScore::dot:
      return LuongScore::dot;
    case StepScore::general:
      return LuongScore::general;
    case StepScore::concat:
      return LuongScore::concat;
    default:
      throw ValueError(std::string("LuongAttention: score must be dot, general or concat, got ") +
                       step_score_name(score));
  }
}

StepAttentionResult from(const AttentionResult& r) { return {r.context, r.weights, Tensor()}; }

// One query run as a block of heads: out (B, [H,] 1, ·) -> context (B, C); weights, when
// asked for, -> (B, W).
StepAttentionResult one_query(const Tensor& out, const Tensor& weights, int64_t C, int64_t W) {
  const int64_t B = out.dim(0);
  return {out.reshape({B, C}), weights.defined() ? weights.reshape({B, W}) : Tensor(), Tensor()};
}

}  // namespace

void StepState::reorder(const Tensor& index) {
  for (Tensor& r : rows) r = gather_rows(r, index);
}

const char* step_score_name(StepScore score) {
  for (const auto& [s, name] : kScoreNames)
    if (s == score) return name;
  return "?";
}

std::optional<StepScore> find_step_score(const std::string& name) {
  for (const auto& [s, n] : kScoreNames)
    if (name == n) return s;
  return std::nullopt;
}

namespace {

// The scores whose ops take a normaliser (ops/attention.h's options.normalizer).
bool takes_normalizer(StepScore score) {
  switch (score) {
    case StepScore::additive:
    case StepScore::additive_normalized:
    case StepScore::dot:
    case StepScore::general:
    case StepScore::concat:
    case StepScore::location:
    case StepScore::location_aware:
      return true;
    default:
      return false;
  }
}

std::unique_ptr<StepAttention> make_module(const StepAttentionOptions& o, Rng& rng) {
  const int64_t D = o.query_size, E = o.memory_size;
  if (D < 1 || E < 1)
    throw ValueError("make_step_attention: query_size and memory_size must be >= 1, got " + std::to_string(D) + ", " +
                     std::to_string(E));
  if (o.coverage != StepCoverage::none && o.score != StepScore::additive && o.score != StepScore::additive_normalized)
    throw ValueError(std::string("make_step_attention: coverage needs an additive score, got ") +
                     step_score_name(o.score));
  switch (o.score) {
    case StepScore::additive:
    case StepScore::additive_normalized:
      return std::make_unique<AdditiveAttention>(D, E, o.score == StepScore::additive_normalized, o.coverage, rng);
    case StepScore::dot:
    case StepScore::general:
    case StepScore::concat:
      return std::make_unique<LuongAttention>(o.score, D, E, rng);
    case StepScore::location:
      return std::make_unique<LocationAttention>(D, E, o.max_src_len, rng);
    case StepScore::scaled_dot:
      return std::make_unique<ScaledDotAttention>(E);
    case StepScore::multihead:
      return std::make_unique<MultiheadStepAttention>(D, E, o.heads, rng);
    case StepScore::local_m:
    case StepScore::local_p:
      return std::make_unique<LocalAttention>(o.score == StepScore::local_p, D, E, o.window, rng);
    case StepScore::hard:
      return std::make_unique<HardAttention>(D, E, o.sample_seed, rng);
    case StepScore::location_aware:
      return std::make_unique<LocationAwareAttention>(D, E, o, rng);
    case StepScore::monotonic:
      return std::make_unique<MonotonicAttention>(D, E, 0, o, rng);
    case StepScore::mocha:
      return std::make_unique<MonotonicAttention>(D, E, o.chunk, o, rng);
  }
  throw ValueError("make_step_attention: unknown score " + std::to_string(static_cast<int>(o.score)));
}

}  // namespace

std::unique_ptr<StepAttention> make_step_attention(const StepAttentionOptions& o, Rng& rng) {
  check_normalizer("make_step_attention", o.normalizer);
  if (o.normalizer.kind != NormalizerKind::softmax && !takes_normalizer(o.score))
    throw ValueError(std::string("make_step_attention: the ") + normalizer_name(o.normalizer.kind) +
                     " normaliser needs an additive, dot, general, concat, location or location_aware score, got " +
                     step_score_name(o.score));
  if (o.normalizer.kind != NormalizerKind::softmax && o.location_smoothing)
    throw ValueError(std::string("make_step_attention: location smoothing replaces the softmax; it cannot be combined "
                                 "with the ") +
                     normalizer_name(o.normalizer.kind) + " normaliser");
  std::unique_ptr<StepAttention> attention = make_module(o, rng);
  attention->normalizer_ = o.normalizer;
  return attention;
}

// ---- additive ---------------------------------------------------------------------------------

AdditiveAttention::AdditiveAttention(int64_t D, int64_t E, bool normalize, StepCoverage coverage, Rng& rng)
    : SingleHeadStepAttention(E), normalize_(normalize), coverage_(coverage) {
  AdditiveParams p = additive_attention_init(D, E, /*A=*/D, rng, normalize);
  w_q = register_parameter("w_q", p.w_q);
  w_k = register_parameter("w_k", p.w_k);
  bias = register_parameter("bias", p.bias);
  v = register_parameter("v", p.v);
  if (normalize) g = register_parameter("g", p.g);
  // Zeros: a new coverage model starts as plain Bahdanau (and tu's fertility at N σ(0) = 1),
  // drawing nothing from rng.
  if (coverage != StepCoverage::none) w_c = register_parameter("w_c", Tensor::zeros({D}));
  if (coverage == StepCoverage::tu) w_f = register_parameter("w_f", Tensor::zeros({1, E}));
}

StepMemory AdditiveAttention::prepare(const Tensor& values, const Tensor& lengths) const {
  StepMemory m{values, lengths, additive_project_keys(values, w_k), Tensor(), Tensor()};  // (B, S, A), once per batch
  if (coverage_ == StepCoverage::tu) {
    // 1 / Φ = (1 + e^{−w_f·h}) / N, Φ = N σ(w_f·h): (B, S)
    const int64_t B = values.dim(0), S = values.dim(1);
    const Tensor x = linear(values, w_f).reshape({B, S});
    m.inverse_fertility = scale(add(exp(scale(x, -1.0f)), Tensor::full({B, S}, 1.0f)), 1.0f / kTuFertilityMax);
  }
  return m;
}

StepState AdditiveAttention::start(const StepMemory& m) const {
  StepState state;
  if (w_c.defined()) state.rows.push_back(Tensor::zeros({m.values.dim(0), m.values.dim(1)}));  // c_0 (B, S)
  return state;
}

StepAttentionResult AdditiveAttention::attend(const Tensor& query, const StepMemory& m, StepState& state,
                                              bool need_weights) {
  AdditiveOptions o;
  o.normalizer = normalizer_;
  o.normalize = normalize_;
  o.g = g;
  o.need_weights = need_weights || w_c.defined();  // coverage adds the weights up
  if (!w_c.defined()) return from(additive_attention(query, m.keys, m.values, w_q, bias, v, m.lengths, o));
  Tensor& coverage = state.rows.at(0);  // c_t (B, S): the earlier steps' attention only
  StepAttentionResult r =
      from(additive_attention(query, add_outer(m.keys, coverage, w_c), m.values, w_q, bias, v, m.lengths, o));
  if (coverage_ == StepCoverage::see) {
    r.coverage_loss = coverage_overlap(r.weights, coverage);  // (B)
    coverage = add(coverage, r.weights);                      // c_{t+1}
  } else {
    coverage = add(coverage, mul(r.weights, m.inverse_fertility));  // c_{t+1} = c_t + a_t / Φ
  }
  return r;
}

// ---- location-aware (Chorowski) ---------------------------------------------------------------

LocationAwareAttention::LocationAwareAttention(int64_t D, int64_t E, const StepAttentionOptions& o, Rng& rng)
    : SingleHeadStepAttention(E), sharpening_(o.location_sharpening), smoothing_(o.location_smoothing) {
  LocationAwareParams p = location_aware_attention_init(D, E, /*A=*/D, o.location_filters, o.location_width, rng);
  w_q = register_parameter("w_q", p.w_q);
  w_k = register_parameter("w_k", p.w_k);
  bias = register_parameter("bias", p.bias);
  v = register_parameter("v", p.v);
  filters = register_parameter("filters", p.filters);
  w_loc = register_parameter("w_loc", p.w_loc);
}

StepMemory LocationAwareAttention::prepare(const Tensor& values, const Tensor& lengths) const {
  return {values, lengths, additive_project_keys(values, w_k), Tensor(), Tensor()};  // (B, S, A), once per batch
}

StepState LocationAwareAttention::start(const StepMemory& m) const {
  const int64_t B = m.values.dim(0), S = m.values.dim(1);
  Tensor a0 = Tensor::zeros({B, S});  // uniform over the real positions, 0 past them
  for (int64_t b = 0; b < B; ++b) {
    const int32_t L = std::min<int32_t>(m.lengths.i32()[b], static_cast<int32_t>(S));
    for (int64_t s = 0; s < L; ++s) a0.f32()[b * S + s] = 1.0f / static_cast<float>(L);
  }
  return {0, {a0}};
}

StepAttentionResult LocationAwareAttention::attend(const Tensor& query, const StepMemory& m, StepState& state,
                                                   bool need_weights) {
  const LocationAwareOptions o{.sharpening = sharpening_,
                               .smoothing = smoothing_,
                               .normalizer = normalizer_,
                               .need_weights = true};  // a_t is the next step's a_{t−1}
  const AttentionResult r =
      location_aware_attention(query, m.keys, m.values, state.rows.at(0), w_q, bias, v, filters, w_loc, m.lengths, o);
  state.rows[0] = r.weights;
  return {r.context, need_weights ? r.weights : Tensor(), Tensor()};
}

// ---- monotonic (Raffel) and MoChA (Chiu & Raffel) -------------------------------------------

MonotonicAttention::MonotonicAttention(int64_t D, int64_t E, int64_t chunk, const StepAttentionOptions& o, Rng& rng)
    : SingleHeadStepAttention(E), chunk_(chunk), noise_(o.monotonic_noise), noise_rng_(o.sample_seed) {
  if (chunk < 0)
    throw ValueError("MonotonicAttention: the chunk width must be >= 1 (mocha) or 0, got " + std::to_string(chunk));
  register_random_stream("noise_rng", noise_rng_);  // resumed runs continue the same noise
  AdditiveParams p = additive_attention_init(D, E, /*A=*/D, rng);
  w_q = register_parameter("w_q", p.w_q);
  w_k = register_parameter("w_k", p.w_k);
  bias = register_parameter("bias", p.bias);
  v = register_parameter("v", p.v);
  r = register_parameter("r", Tensor::full({1}, o.monotonic_bias));
  if (chunk == 0) return;
  AdditiveParams c = additive_attention_init(D, E, /*A=*/D, rng);
  chunk_w_q = register_parameter("chunk_w_q", c.w_q);
  chunk_w_k = register_parameter("chunk_w_k", c.w_k);
  chunk_bias = register_parameter("chunk_bias", c.bias);
  chunk_v = register_parameter("chunk_v", c.v);
}

StepMemory MonotonicAttention::prepare(const Tensor& values, const Tensor& lengths) const {
  // (B, S, A) each, once per batch
  return {values, lengths, additive_project_keys(values, w_k),
          chunk_ > 0 ? additive_project_keys(values, chunk_w_k) : Tensor(), Tensor()};
}

StepState MonotonicAttention::start(const StepMemory& m) const {
  const int64_t B = m.values.dim(0), S = m.values.dim(1);
  if (!is_training()) return {0, {Tensor::zeros({B})}};  // every row reads from position 0
  Tensor delta = Tensor::zeros({B, S});                  // α_0 = δ_0: "attending" before the first position
  for (int64_t b = 0; b < B; ++b)
    if (m.lengths.i32()[b] > 0) delta.f32()[b * S] = 1.0f;
  return {0, {delta}};
}

Tensor MonotonicAttention::chunk_energy(const Tensor& query, const StepMemory& m) const {
  return additive_energy(query, m.projected_values, chunk_w_q, chunk_bias, chunk_v, Tensor(), m.lengths);
}

// c = Σ_s weights_s values_s: (B, 1, S) · (B, S, E) -> (B, E).
static Tensor weighted_values(const Tensor& weights, const Tensor& values) {
  const int64_t B = values.dim(0), S = values.dim(1), E = values.dim(2);
  return reshape(bmm(reshape(weights, {B, 1, S}), values), {B, E});
}

StepAttentionResult MonotonicAttention::expected(const Tensor& query, const StepMemory& m, StepState& state) {
  Tensor energy = additive_energy(query, m.keys, w_q, bias, v, r, m.lengths);  // (B, S)
  if (noise_ > 0.0f) {
    Tensor noise = Tensor::empty(energy.shape());
    for (int64_t i = 0; i < noise.numel(); ++i) noise.f32()[i] = noise_ * noise_rng_.normal();
    energy = add(energy, noise);
  }
  const Tensor alpha = monotonic_alignment(energy, state.rows.at(0), m.lengths);  // (B, S)
  state.rows[0] = alpha;
  const Tensor weights = chunk_ > 0 ? mocha_chunk_attention(alpha, chunk_energy(query, m), m.lengths, chunk_) : alpha;
  return {weighted_values(weights, m.values), weights, Tensor(), Tensor(), Tensor()};
}

StepAttentionResult MonotonicAttention::online(const Tensor& query, const StepMemory& m, StepState& state,
                                               bool need_weights) {
  const int64_t B = m.values.dim(0);
  Tensor start = Tensor::empty({B}, DType::i32);
  for (int64_t b = 0; b < B; ++b) start.i32()[b] = static_cast<int32_t>(state.rows.at(0).f32()[b]);
  MonotonicOnlineOptions o;
  o.selection = {m.keys, w_q, bias, v, r};
  if (chunk_ > 0) o.chunk = {m.projected_values, chunk_w_q, chunk_bias, chunk_v, Tensor()};
  o.chunk_width = std::max<int64_t>(chunk_, 1);
  o.need_weights = need_weights;
  // Reads each row from its position only up to the stop (O(frames read), not O(S), per step).
  const MonotonicOnlineResult read = monotonic_online_step(query, m.values, m.lengths, start, o);
  // A step that reads to the end without stopping has a zero context (Raffel's c_i = 0) and still
  // gives its output token (a model may place its last one past the input's end, as the
  // expected alignment lets it); its position becomes L_b, and the next step, with nothing
  // left to read, ends the output (exhausted).
  Tensor exhausted = Tensor::empty({B}, DType::i32);
  Tensor position = Tensor::empty({B});
  for (int64_t b = 0; b < B; ++b) {
    const int32_t j = read.selected.i32()[b], length = m.lengths.i32()[b];
    exhausted.i32()[b] = start.i32()[b] >= length ? 1 : 0;
    position.f32()[b] = static_cast<float>(j < 0 ? length : j);  // the next step reads on from here
  }
  state.rows[0] = position;
  return {read.context, read.weights, Tensor(), Tensor(), exhausted};
}

StepAttentionResult MonotonicAttention::attend(const Tensor& query, const StepMemory& m, StepState& state,
                                               bool need_weights) {
  return is_training() ? expected(query, m, state) : online(query, m, state, need_weights);
}

// ---- Luong global: dot | general | concat, location, scaled_dot ---------------------------------

LuongAttention::LuongAttention(StepScore score, int64_t D, int64_t E, Rng& rng)
    : SingleHeadStepAttention(E), score_(luong_score(score)) {
  LuongParams p = luong_attention_init(score_, D, E, /*A=*/D, rng);
  if (p.w.defined()) w = register_parameter("w", p.w);
  if (p.v.defined()) v = register_parameter("v", p.v);
}

StepAttentionResult LuongAttention::attend(const Tensor& query, const StepMemory& m, StepState&, bool need_weights) {
  LuongOptions o;
  o.normalizer = normalizer_;
  o.score = score_;
  o.w = w;
  o.v = v;
  o.need_weights = need_weights;
  return from(luong_attention(query, m.values, m.values, m.lengths, o));
}

LocationAttention::LocationAttention(int64_t D, int64_t E, int64_t max_src_len, Rng& rng) : SingleHeadStepAttention(E) {
  LocationParams p = location_attention_init(D, max_src_len, rng);
  w_a = register_parameter("w_a", p.w_a);
  b_a = register_parameter("b_a", p.b_a);
}

StepAttentionResult LocationAttention::attend(const Tensor& query, const StepMemory& m, StepState&, bool need_weights) {
  LocationOptions o;
  o.normalizer = normalizer_;
  o.need_weights = need_weights;
  return from(location_attention(query, m.values, w_a, b_a, m.lengths, o));
}

StepMemory ScaledDotAttention::prepare(const Tensor& values, const Tensor& lengths) const {
  const Tensor heads = values.reshape({values.dim(0), 1, values.dim(1), values.dim(2)});  // (B, 1, S, E)
  return {values, lengths, heads, heads, Tensor()};
}

StepAttentionResult ScaledDotAttention::attend(const Tensor& query, const StepMemory& m, StepState&,
                                               bool need_weights) {
  SdpaOptions o;
  o.key_lengths = m.lengths;
  o.need_weights = need_weights;
  const Tensor q = query.reshape({query.dim(0), 1, 1, query.dim(1)});  // (B, 1, 1, D)
  const SdpaResult r = sdpa(q, m.keys, m.projected_values, o);         // scale 1 / √E
  return one_query(r.out, r.weights, context_size(), m.values.dim(1));
}

// ---- multihead ------------------------------------------------------------------------------------

MultiheadStepAttention::MultiheadStepAttention(int64_t D, int64_t E, int64_t heads, Rng& rng)
    : mha({.embed_dim = D, .num_heads = heads, .kdim = E, .vdim = E, .separate_projections = true}) {
  // Drawn from the model's Rng, not mha's own seed, in the order of the decoder's multihead
  // attention before it used nn::MultiheadAttention (so a seed gives the same model and old
  // checkpoints the same names): q, k, v Xavier; out_proj drawn as nn.Linear's default, then
  // overwritten by Xavier (those draws kept for the sake of the stream); biases zero.
  xavier_uniform_(mha.q_proj_weight, rng);
  xavier_uniform_(mha.k_proj_weight, rng);
  xavier_uniform_(mha.v_proj_weight, rng);
  linear_default_init_(mha.out_proj.weight, mha.out_proj.bias, rng);
  xavier_uniform_(mha.out_proj.weight, rng);
  mha.out_proj.bias.fill(0.0f);
}

StepMemory MultiheadStepAttention::prepare(const Tensor& values, const Tensor& lengths) const {
  auto [k, v] = mha.project_kv(values, values);  // (B, H, S, Dh) each, once per batch
  return {values, lengths, k, v, Tensor()};
}

StepAttentionResult MultiheadStepAttention::attend(const Tensor& query, const StepMemory& m, StepState&,
                                                   bool need_weights) {
  const Tensor q = query.reshape({query.dim(0), 1, query.dim(1)});  // (B, 1, D)
  const MhaResult r =
      mha.attend_projected(q, m.keys, m.projected_values,
                           {.key_lengths = m.lengths, .need_weights = need_weights});  // (B, 1, D), (B, H, 1, S)
  return one_query(r.out, r.weights, context_size(), weight_heads() * m.values.dim(1));
}

// ---- local_m / local_p -------------------------------------------------------------------------------

LocalAttention::LocalAttention(bool predictive, int64_t D, int64_t E, int64_t window, Rng& rng)
    : SingleHeadStepAttention(E), window_(window), predictive_(predictive) {
  LocalParams p = local_attention_init(predictive ? LocalMode::predictive : LocalMode::monotonic, LuongScore::general,
                                       D, E, /*A=*/D, rng);
  w = register_parameter("w", p.w);
  if (predictive) {
    w_p = register_parameter("w_p", p.w_p);
    v_p = register_parameter("v_p", p.v_p);
  }
}

StepAttentionResult LocalAttention::attend(const Tensor& query, const StepMemory& m, StepState& state,
                                           bool need_weights) {
  const int64_t B = query.dim(0);
  LocalOptions o;
  o.mode = predictive_ ? LocalMode::predictive : LocalMode::monotonic;
  o.window = static_cast<int>(window_);
  o.w = w;
  o.w_p = w_p;
  o.v_p = v_p;
  o.need_weights = need_weights;
  if (!predictive_) {  // p_t = t, kept inside the row's source: min(t, L_b − 1)
    o.positions = Tensor::empty({B}, DType::i32);
    for (int64_t b = 0; b < B; ++b)
      o.positions.i32()[b] = static_cast<int32_t>(std::min<int64_t>(state.t, std::max(m.lengths.i32()[b] - 1, 0)));
  }
  return from(local_attention(query, m.values, m.values, m.lengths, o));
}

// ---- hard ----------------------------------------------------------------------------------------------

HardAttention::HardAttention(int64_t D, int64_t E, uint64_t sample_seed, Rng& rng)
    : SingleHeadStepAttention(E), sample_rng_(sample_seed) {
  register_random_stream("sample_rng", sample_rng_);  // resumed runs continue the same samples
  w = register_parameter("w", luong_attention_init(LuongScore::general, D, E, 0, rng).w);
}

StepAttentionResult HardAttention::attend(const Tensor& query, const StepMemory& m, StepState&, bool) {
  LuongOptions o;
  o.score = LuongScore::general;
  o.w = w;
  o.need_weights = true;  // the distribution it samples from
  AttentionResult r = luong_attention(query, m.values, m.values, m.lengths, o);
  // One position per row, sampled in training, the argmax otherwise.
  HardAttentionSample h = hard_attention_sample(r.weights, m.values, is_training(), sample_rng_);
  return {h.context, r.weights, is_training() ? h.log_prob : Tensor()};
}

}  // namespace attn::nn
