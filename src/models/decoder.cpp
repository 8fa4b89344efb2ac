// The decoder (none / bahdanau / luong); its attention is an nn::StepAttention.
#include <algorithm>
#include <string>

#include "attn/models/seq2seq.h"
#include "attn/ops/elementwise.h"
#include "attn/ops/linear.h"
#include "attn/ops/pointer.h"
#include "attn/ops/rnn_cell.h"
#include "attn/ops/select.h"
#include "attn/ops/shape_ops.h"

namespace attn::models {
namespace {

int64_t decoder_input_size(const Seq2SeqConfig& c, AttentionKind kind, int64_t encoder_size) {
  if (kind == AttentionKind::bahdanau) return c.emb + encoder_size;
  if (kind == AttentionKind::luong && c.input_feeding) return c.emb + c.hidden;
  return c.emb;
}

int64_t output_features(const Seq2SeqConfig& c, AttentionKind kind, int64_t encoder_size) {
  return kind == AttentionKind::bahdanau ? c.hidden + encoder_size + c.emb : c.hidden;
}

// The pointer's log P (T, B, Vx) of every teacher-forced step at once: logits (T, B, V),
// p_gen (T, B), weights (T, B, S), src_ext (B, S) repeated for each step.
Tensor pointer_over_steps(const Tensor& logits, const Tensor& p_gen, const Tensor& weights, const Tensor& src_ext,
                          int64_t extended_vocab) {
  ShapeContract contract("Decoder");
  contract.check("weights", weights, {"T", "B", "S"}).check("src_ext", src_ext, {"B", "S"}, DType::i32);
  const int64_t T = contract["T"], B = contract["B"], S = contract["S"], V = logits.dim(2);
  Tensor ids = Tensor::empty({T * B, S}, DType::i32);  // (T·B, S)
  for (int64_t t = 0; t < T; ++t) std::copy(src_ext.i32(), src_ext.i32() + B * S, ids.i32() + t * B * S);
  const Tensor y = pointer_log_probs(logits.reshape({T * B, V}), p_gen.reshape({T * B}), weights.reshape({T * B, S}),
                                     ids, extended_vocab);
  return y.reshape({T, B, extended_vocab});
}

}  // namespace

// ---- Decoder --------------------------------------------------------------------------------

Decoder::Decoder(const Seq2SeqConfig& config, int64_t E, Rng& rng)
    : config_(config),
      embedding(config.vocab, config.emb, rng, kPad),
      rnn(config.encoder == RnnCell::lstm, decoder_input_size(config, config.attention, E), config.hidden,
          config.layers, false, rng),
      out(output_features(config, config.attention, E), config.vocab, rng),
      dropout_(config.dropout, splitmix64(config.seed ^ 0xDEC0DE5ULL)) {
  register_module("embedding", embedding);
  register_module("rnn", rnn);
  if (kind() != AttentionKind::none) {
    attention = nn::make_step_attention({.score = config.step_score(),
                                         .query_size = config.hidden,
                                         .memory_size = E,
                                         .heads = config.heads,
                                         .window = config.window,
                                         .max_src_len = config.max_src_len,
                                         .sample_seed = splitmix64(config.seed ^ 0x4A2DA77ULL),
                                         .location_filters = config.location_filters,
                                         .location_width = config.location_width,
                                         .location_sharpening = config.location_sharpening,
                                         .location_smoothing = config.location_smoothing,
                                         .coverage = step_coverage(config.coverage),
                                         .normalizer = config.normalizer,
                                         .monotonic_bias = config.monotonic_bias,
                                         .monotonic_noise = config.monotonic_noise,
                                         .chunk = config.chunk},
                                        rng);
    register_module("attention", attention->module());
  }
  if (kind() == AttentionKind::luong) {
    linear_out = std::make_unique<nn::Linear>(attention->context_size() + config.hidden, config.hidden, rng, false);
    register_module("linear_out", *linear_out);
  }
  if (config.pointer) {
    pointer_gate = std::make_unique<nn::Linear>(attention->context_size() + config.hidden + config.emb, 1, rng);
    register_module("pointer_gate", *pointer_gate);
  }
  register_module("out", out);
  register_module("dropout", dropout_);
}

DecoderState Decoder::initial_state(const EncoderOutput& enc, const nn::StepMemory& memory, int64_t batch) const {
  DecoderState s;
  s.h = enc.h;
  s.c = enc.c;
  if (kind() == AttentionKind::luong && config_.input_feeding) s.feed = Tensor::zeros({batch, config_.hidden});
  if (attention) s.attention = attention->start(memory);
  return s;
}

void DecoderState::reorder(const Tensor& index) {
  for (Tensor& x : h) x = gather_rows(x, index);
  for (Tensor& x : c) x = gather_rows(x, index);
  if (feed.defined()) feed = gather_rows(feed, index);
  attention.reorder(index);
}

nn::StepMemory Decoder::prepare(const EncoderOutput& enc, const Tensor& src_lengths) const {
  if (!attention) return {enc.outputs, src_lengths, Tensor(), Tensor(), Tensor()};
  return attention->prepare(enc.outputs, src_lengths);
}

Decoder::Step Decoder::step(const Tensor& emb_prev, DecoderState& state, const nn::StepMemory& memory,
                            bool need_weights, const Tensor* projected_input) {
  Step s;
  need_weights = need_weights || pointer_gate != nullptr;  // the pointer copies with the weights
  Tensor x = emb_prev;                                     // (B, emb)
  if (kind() == AttentionKind::bahdanau) {
    nn::StepAttentionResult r =
        attention->step(state.h.back(), memory, state.attention, need_weights);  // queries with s_{t-1}
    s.context = r.context;
    s.weights = r.weights;
    s.coverage_loss = r.coverage_loss;
    s.exhausted = r.exhausted;
    x = concat({emb_prev, r.context});
  } else if (kind() == AttentionKind::luong && config_.input_feeding) {
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
  if (kind() == AttentionKind::luong) {
    nn::StepAttentionResult r = attention->step(s.top, memory, state.attention, need_weights);  // queries with s_t
    s.context = r.context;
    s.weights = r.weights;
    s.log_prob = r.log_prob;
    s.feature = tanh(linear_out->forward(concat({r.context, s.top})));  // h̃_t (B, D)
    if (config_.input_feeding) state.feed = s.feature;
  } else if (kind() == AttentionKind::none) {
    s.feature = s.top;
  }
  if (!attention) ++state.attention.t;  // an attention module advances it in step()
  if (pointer_gate) {                   // p_gen = σ(w_cᵀ c_t + w_sᵀ s_t + w_xᵀ x_t + b), x_t = emb(y_{t−1})
    const int64_t B = emb_prev.dim(0);
    s.p_gen = sigmoid(pointer_gate->forward(concat({s.context, s.top, emb_prev}))).reshape({B});  // (B)
  }
  return s;
}

Tensor Decoder::step_logits(const Step& s, const Tensor& emb_prev) const {
  if (kind() != AttentionKind::bahdanau) return out.forward(s.feature);
  Tensor logits = out.forward(concat({s.top, s.context, emb_prev}));  // (B, V)
  if (!s.exhausted.defined()) return logits;
  // Decoding only (no gradient flows through a forced row): the input is read, the output ends.
  const int64_t B = logits.dim(0), V = logits.dim(1);
  for (int64_t b = 0; b < B; ++b) {
    if (!s.exhausted.i32()[b]) continue;
    float* row = logits.f32() + b * V;
    std::fill(row, row + V, -1e9f);
    row[kEos] = 0.0f;
  }
  return logits;
}

Tensor Decoder::step_pointer_log_probs(const Step& s, const Tensor& emb_prev, const Tensor& src_ext,
                                       int64_t extended_vocab) const {
  return pointer_log_probs(step_logits(s, emb_prev), s.p_gen, s.weights, src_ext, extended_vocab);  // (B, Vx)
}

Tensor in_vocabulary(const Tensor& ids, int64_t V) {
  Tensor out = Tensor::empty(ids.shape(), DType::i32);
  for (int64_t i = 0; i < ids.numel(); ++i) out.i32()[i] = ids.i32()[i] >= V ? kUnk : ids.i32()[i];
  return out;
}

DecoderOutput Decoder::forward(const Tensor& tgt_in, const EncoderOutput& enc, const Tensor& src_lengths,
                               const Tensor& src_ext, int64_t extended_vocab) {
  ShapeContract contract("Decoder");
  contract.check("tgt_in", tgt_in, {"B", "T"}, DType::i32);
  if (pointer_gate && !src_ext.defined())
    throw ValueError("Decoder: the pointer-generator needs the source's ids (src_ext) for its copy distribution");
  const int64_t B = tgt_in.dim(0), T = tgt_in.dim(1);
  const Tensor emb_all = embedding.forward(time_major_ids(tgt_in));  // (T, B, emb)
  const nn::StepMemory memory = prepare(enc, src_lengths);
  DecoderState state = initial_state(enc, memory, B);
  // Without attention the first layer's input is known ahead: one GEMM over T·B rows.
  Tensor projected;
  if (kind() == AttentionKind::none) projected = linear(emb_all, rnn.at(0, 0).w_ih, rnn.at(0, 0).b_ih);  // (T, B, G)
  std::vector<Tensor> tops, contexts, features, hard_log_probs, coverage_terms, weights, p_gens;
  tops.reserve(static_cast<size_t>(T));
  contexts.reserve(static_cast<size_t>(T));
  features.reserve(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) {
    Tensor gx;
    if (projected.defined()) gx = projected.select(t);
    Step s = step(emb_all.select(t), state, memory, false, projected.defined() ? &gx : nullptr);
    if (kind() == AttentionKind::bahdanau) {
      tops.push_back(s.top);
      contexts.push_back(s.context);
    } else {
      features.push_back(s.feature);
    }
    if (s.log_prob.defined()) hard_log_probs.push_back(s.log_prob);
    if (s.coverage_loss.defined()) coverage_terms.push_back(s.coverage_loss);
    if (pointer_gate) {
      weights.push_back(s.weights);
      p_gens.push_back(s.p_gen);
    }
  }
  DecoderOutput result;
  // The output layer over all T steps at once: one GEMM over T·B rows.
  result.logits = kind() == AttentionKind::bahdanau
                      ? out.forward(concat({stack_rows(tops), stack_rows(contexts), emb_all}))  // (T, B, V)
                      : out.forward(stack_rows(features));                                      // (T, B, V)
  if (pointer_gate)
    result.logits = pointer_over_steps(result.logits, stack_rows(p_gens), stack_rows(weights), src_ext,
                                       extended_vocab);                             // (T, B, Vx)
  if (!hard_log_probs.empty()) result.hard_log_probs = stack_rows(hard_log_probs);  // (T, B)
  if (!coverage_terms.empty()) result.coverage_terms = stack_rows(coverage_terms);  // (T, B)
  return result;
}

}  // namespace attn::models
