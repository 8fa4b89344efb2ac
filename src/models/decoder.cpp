// The attention module and the decoder (none / bahdanau / luong).
#include <algorithm>
#include <cmath>
#include <string>

#include "attn/models/seq2seq.h"
#include "attn/nn/init.h"
#include "attn/ops/elementwise.h"
#include "attn/ops/heads.h"
#include "attn/ops/linear.h"
#include "attn/ops/local_attention.h"
#include "attn/ops/rnn_cell.h"
#include "attn/ops/sdpa.h"
#include "attn/ops/shape_ops.h"

namespace attn::models {
namespace {

Tensor xavier(const Shape& shape, Rng& rng) {
  Tensor t = Tensor::empty(shape);
  nn::xavier_uniform_(t, rng);
  return t;
}

// A vector parameter (N) drawn as Xavier of a (1, N) matrix.
Tensor xavier_vector(int64_t n, Rng& rng) { return xavier({1, n}, rng).reshape({n}); }

int64_t decoder_input_size(const Seq2SeqConfig& c, int64_t encoder_size) {
  if (c.attention == "bahdanau") return c.emb + encoder_size;
  if (c.attention == "luong" && c.input_feeding) return c.emb + c.hidden;
  return c.emb;
}

int64_t output_features(const Seq2SeqConfig& c, int64_t encoder_size) {
  return c.attention == "bahdanau" ? c.hidden + encoder_size + c.emb : c.hidden;
}

}  // namespace

// ---- Attention ------------------------------------------------------------------------------

Attention::Attention(const std::string& kind_, const std::string& score_, int64_t D, int64_t E,
                     const Seq2SeqConfig& config, Rng& rng)
    : kind(kind_), score(score_), context_size_(E), sample_rng_(splitmix64(config.seed ^ 0x4A2DA77ULL)) {
  register_random_stream("sample_rng", sample_rng_);
  const int64_t A = D;  // attention size
  if (kind == "bahdanau") {
    w_q = register_parameter("w_q", xavier({A, D}, rng));
    w_k = register_parameter("w_k", xavier({A, E}, rng));
    bias = register_parameter("bias", Tensor::zeros({A}));
    v = register_parameter("v", xavier_vector(A, rng));
    // Normed Bahdanau (TF): g starts at sqrt(1 / A).
    if (score == "additive_normalized") g = register_parameter("g", Tensor::full({}, std::sqrt(1.0f / A)));
  } else if (score == "general" || score == "local_m" || score == "local_p" || score == "hard") {
    w = register_parameter("w", xavier({D, E}, rng));
    window = config.window;
    if (score == "local_p") {
      w_p = register_parameter("w_p", xavier({A, D}, rng));
      v_p = register_parameter("v_p", xavier_vector(A, rng));
    }
  } else if (score == "concat") {
    w = register_parameter("w", xavier({A, D + E}, rng));
    v = register_parameter("v", xavier_vector(A, rng));
  } else if (score == "location") {
    w_a = register_parameter("w_a", xavier({config.max_src_len, D}, rng));
    b_a = register_parameter("b_a", Tensor::zeros({config.max_src_len}));
  } else if (score == "multihead") {
    // torch.nn.MultiheadAttention(D, H, kdim=E, vdim=E) names and initialisation order.
    heads = config.heads;
    q_proj_weight = register_parameter("q_proj_weight", xavier({D, D}, rng));
    k_proj_weight = register_parameter("k_proj_weight", xavier({D, E}, rng));
    v_proj_weight = register_parameter("v_proj_weight", xavier({D, E}, rng));
    in_proj_bias = register_parameter("in_proj_bias", Tensor::zeros({3 * D}));
    out_proj = std::make_unique<nn::Linear>(D, D, rng);
    nn::xavier_uniform_(out_proj->weight, rng);
    out_proj->bias.fill(0.0f);
    register_module("out_proj", *out_proj);
    context_size_ = D;
  }
}

AttentionMemory Attention::prepare(const Tensor& values, const Tensor& lengths) const {
  AttentionMemory m{values, lengths, Tensor(), Tensor(), Tensor()};
  if (kind == "bahdanau") m.projected_keys = additive_project_keys(values, w_k);  // once per batch
  if (score == "scaled_dot") m.values_heads = values.reshape({values.dim(0), 1, values.dim(1), values.dim(2)});
  if (score == "multihead") {  // keys and values projected once per batch: (B, H, S, Dh)
    const int64_t D = q_proj_weight.dim(0);
    const std::vector<Tensor> b = split(in_proj_bias, {D, D, D});
    m.keys_heads = split_heads(linear(values, k_proj_weight, b[1]), heads);
    m.values_heads = split_heads(linear(values, v_proj_weight, b[2]), heads);
  }
  return m;
}

AttendOutput Attention::attend(const Tensor& query, const AttentionMemory& m, int64_t step, bool need_weights) {
  const int64_t B = query.dim(0), D = query.dim(1), S = m.values.dim(1), E = m.values.dim(2);
  if (kind == "bahdanau") {
    AdditiveOptions o;
    o.normalize = score == "additive_normalized";
    o.g = g;
    o.need_weights = need_weights;
    AttentionResult r = additive_attention(query, m.projected_keys, m.values, w_q, bias, v, m.lengths, o);
    return {r.context, r.weights, Tensor()};
  }
  if (score == "location") {
    LocationOptions o;
    o.need_weights = need_weights;
    AttentionResult r = location_attention(query, m.values, w_a, b_a, m.lengths, o);
    return {r.context, r.weights, Tensor()};
  }
  if (score == "scaled_dot" || score == "multihead") {
    SdpaOptions o;
    o.key_lengths = m.lengths;
    o.need_weights = need_weights;
    if (score == "scaled_dot") {
      SdpaResult r = sdpa(query.reshape({B, 1, 1, D}), m.values_heads, m.values_heads, o);
      return {r.out.reshape({B, E}), need_weights ? r.weights.reshape({B, S}) : Tensor(), Tensor()};
    }
    const Tensor b_q = split(in_proj_bias, {D, D, D})[0];
    const Tensor q = split_heads(linear(query, q_proj_weight, b_q).reshape({B, 1, D}), heads);  // (B, H, 1, Dh)
    SdpaResult r = sdpa(q, m.keys_heads, m.values_heads, o);                                   // (B, H, 1, Dh)
    const Tensor context = out_proj->forward(merge_heads(r.out).reshape({B, D}));
    return {context, need_weights ? r.weights.reshape({B, heads * S}) : Tensor(), Tensor()};
  }
  if (score == "local_m" || score == "local_p") {
    LocalOptions o;
    o.mode = score == "local_m" ? LocalMode::monotonic : LocalMode::predictive;
    o.window = static_cast<int>(window);
    o.w = w;
    o.w_p = w_p;
    o.v_p = v_p;
    o.need_weights = need_weights;
    if (score == "local_m") {  // p_t = t, kept inside the row's source: min(t, L_b − 1)
      o.positions = Tensor::empty({B}, DType::i32);
      for (int64_t b = 0; b < B; ++b)
        o.positions.i32()[b] = static_cast<int32_t>(std::min<int64_t>(step, std::max(m.lengths.i32()[b] - 1, 0)));
    }
    AttentionResult r = local_attention(query, m.values, m.values, m.lengths, o);
    return {r.context, r.weights, Tensor()};
  }
  LuongOptions o;
  o.score = score == "dot" ? LuongScore::dot : score == "concat" ? LuongScore::concat : LuongScore::general;
  o.w = w;
  o.v = v;
  o.need_weights = need_weights || score == "hard";
  AttentionResult r = luong_attention(query, m.values, m.values, m.lengths, o);
  if (score != "hard") return {r.context, r.weights, Tensor()};
  // Hard attention: one position per row, sampled in training, the argmax otherwise.
  HardAttentionSample h = hard_attention_sample(r.weights, m.values, is_training(), sample_rng_);
  return {h.context, r.weights, is_training() ? h.log_prob : Tensor()};
}

// ---- Decoder --------------------------------------------------------------------------------

Decoder::Decoder(const Seq2SeqConfig& config, int64_t E, Rng& rng)
    : embedding(config.vocab, config.emb, rng, data::kPad),
      rnn(config.encoder == "lstm", decoder_input_size(config, E), config.hidden, config.layers, false, rng),
      out(output_features(config, E), config.vocab, rng),
      config_(config),
      dropout_(config.dropout, splitmix64(config.seed ^ 0xDEC0DE5ULL)) {
  register_module("embedding", embedding);
  register_module("rnn", rnn);
  if (config.attention != "none") {
    attention = std::make_unique<Attention>(config.attention, config.effective_score(), config.hidden, E, config,
                                            rng);
    register_module("attention", *attention);
  }
  if (config.attention == "luong") {
    linear_out = std::make_unique<nn::Linear>(attention->context_size() + config.hidden, config.hidden, rng, false);
    register_module("linear_out", *linear_out);
  }
  register_module("out", out);
  register_module("dropout", dropout_);
}

DecoderState Decoder::initial_state(const EncoderOutput& enc, int64_t batch) const {
  DecoderState s;
  s.h = enc.h;
  s.c = enc.c;
  if (config_.attention == "luong" && config_.input_feeding) s.feed = Tensor::zeros({batch, config_.hidden});
  return s;
}

AttentionMemory Decoder::prepare(const EncoderOutput& enc, const Tensor& src_lengths) const {
  if (!attention) return AttentionMemory{enc.outputs, src_lengths, Tensor(), Tensor(), Tensor()};
  return attention->prepare(enc.outputs, src_lengths);
}

Decoder::Step Decoder::step(const Tensor& emb_prev, DecoderState& state, const AttentionMemory& memory,
                            bool need_weights, const Tensor* projected_input) {
  Step s;
  Tensor x = emb_prev;  // (B, emb)
  if (config_.attention == "bahdanau") {
    AttendOutput r = attention->attend(state.h.back(), memory, state.t, need_weights);  // queries with s_{t-1}
    s.context = r.context;
    s.weights = r.weights;
    x = concat({emb_prev, r.context});
  } else if (config_.attention == "luong" && config_.input_feeding) {
    x = concat({emb_prev, state.feed});
  }
  for (int l = 0; l < rnn.layers; ++l) {
    const RnnStack::Weights& w = rnn.at(l, 0);
    const size_t li = static_cast<size_t>(l);
    if (l > 0) x = dropout_.forward(x);
    const bool projected = l == 0 && projected_input != nullptr;
    if (rnn.lstm) {
      auto [h, c] = projected ? lstm_cell_projected(*projected_input, state.h[li], state.c[li], w.w_hh, w.b_hh)
                              : lstm_cell(x, state.h[li], state.c[li], w.w_ih, w.w_hh, w.b_ih, w.b_hh);
      state.h[li] = h;
      state.c[li] = c;
    } else {
      state.h[li] = projected ? gru_cell_projected(*projected_input, state.h[li], w.w_hh, w.b_hh)
                              : gru_cell(x, state.h[li], w.w_ih, w.w_hh, w.b_ih, w.b_hh);
    }
    x = state.h[li];
  }
  s.top = x;  // s_t (B, D)
  if (config_.attention == "luong") {
    AttendOutput r = attention->attend(s.top, memory, state.t, need_weights);  // queries with s_t
    s.context = r.context;
    s.weights = r.weights;
    s.log_prob = r.log_prob;
    s.feature = tanh(linear_out->forward(concat({r.context, s.top})));  // h̃_t (B, D)
    if (config_.input_feeding) state.feed = s.feature;
  } else if (config_.attention == "none") {
    s.feature = s.top;
  }
  ++state.t;
  return s;
}

Tensor Decoder::step_logits(const Step& s, const Tensor& emb_prev) const {
  if (config_.attention == "bahdanau") return out.forward(concat({s.top, s.context, emb_prev}));
  return out.forward(s.feature);
}

Tensor Decoder::forward(const Tensor& tgt_in, const EncoderOutput& enc, const Tensor& src_lengths) {
  ShapeContract contract("Decoder");
  contract.check("tgt_in", tgt_in, {"B", "T"}, DType::i32);
  const int64_t B = tgt_in.dim(0), T = tgt_in.dim(1);
  const Tensor emb_all = embedding.forward(time_major_ids(tgt_in));  // (T, B, emb)
  const AttentionMemory memory = prepare(enc, src_lengths);
  DecoderState state = initial_state(enc, B);
  // Without attention the first layer's input is known ahead: one GEMM over T·B rows.
  Tensor projected;
  if (config_.attention == "none") projected = linear(emb_all, rnn.at(0, 0).w_ih, rnn.at(0, 0).b_ih);  // (T, B, G)
  hard_log_probs.clear();
  std::vector<Tensor> tops, contexts, features;
  tops.reserve(static_cast<size_t>(T));
  contexts.reserve(static_cast<size_t>(T));
  features.reserve(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) {
    Tensor gx;
    if (projected.defined()) gx = projected.select(t);
    Step s = step(emb_all.select(t), state, memory, false, projected.defined() ? &gx : nullptr);
    if (config_.attention == "bahdanau") {
      tops.push_back(s.top);
      contexts.push_back(s.context);
    } else {
      features.push_back(s.feature);
    }
    if (s.log_prob.defined()) hard_log_probs.push_back(s.log_prob);
  }
  // The output layer over all T steps at once: one GEMM over T·B rows.
  if (config_.attention == "bahdanau")
    return out.forward(concat({stack_rows(tops), stack_rows(contexts), emb_all}));  // (T, B, V)
  return out.forward(stack_rows(features));  // (T, B, V)
}

}  // namespace attn::models
