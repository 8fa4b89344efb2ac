// TransformerSeq2Seq: teacher-forced logits and loss, greedy and beam decoding with the
// decoder's key/value cache, cross-attention for inspection.
#include <algorithm>
#include <memory>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/models/memory_estimate.h"
#include "attn/models/transformer.h"
#include "attn/ops/gemm.h"
#include "attn/ops/loss.h"
#include "attn/ops/reduce.h"
#include "attn/ops/select.h"
#include "attn/ops/softmax.h"
#include "attn/shape.h"
#include "beam_search.h"
#include "transformer_common.h"

namespace attn::models {
namespace {

const TransformerConfig& validated(const TransformerConfig& c) {
  c.validate();
  if (c.tgt_vocab <= kEos)
    throw ValueError(fmt::format("TransformerSeq2Seq: tgt_vocab must be > {} (PAD, BOS, EOS are 0, 1, 2), got {}", kEos,
                                 c.tgt_vocab));
  if (c.src_vocab < 1) throw ValueError(fmt::format("TransformerSeq2Seq: src_vocab must be >= 1, got {}", c.src_vocab));
  if (c.encoder_layers < 1 || c.decoder_layers < 1)
    throw ValueError(fmt::format("TransformerSeq2Seq: encoder_layers and decoder_layers must be >= 1, got {} and {}",
                                 c.encoder_layers, c.decoder_layers));
  check_parameter_memory(c, "Transformer encoder-decoder");
  return c;
}

std::unique_ptr<nn::Embedding> make_embedding(bool make, int64_t vocab, int64_t dim, Rng& rng) {
  if (!make) return nullptr;
  auto e = std::make_unique<nn::Embedding>(vocab, dim, rng, kPad);
  detail::init_scaled_embedding(*e, rng);
  return e;
}

// The selected cross-attention of one decoding step, per row: S weights (layer/head as
// `select`, head -1 = the mean over heads). weights: per layer, cross_weights (N, H, 1, S).
void selected_weights(const std::vector<nn::LayerAttention>& layers, const AttentionSelect& select, int64_t row,
                      std::vector<float>& out) {
  const Tensor& w =
      layers[static_cast<size_t>(select.layer < 0 ? static_cast<int>(layers.size()) - 1 : select.layer)].cross_weights;
  const int64_t H = w.dim(1), S = w.dim(-1);
  const int64_t T = w.numel() / (w.dim(0) * H * S);  // 1 for a step
  const float* base = w.f32() + row * H * T * S + (T - 1) * S;
  out.assign(static_cast<size_t>(S), 0.0f);
  if (select.head >= 0) {
    const float* p = base + select.head * T * S;
    for (int64_t s = 0; s < S; ++s) out[static_cast<size_t>(s)] = p[s];
    return;
  }
  for (int64_t h = 0; h < H; ++h) {
    const float* p = base + h * T * S;
    for (int64_t s = 0; s < S; ++s) out[static_cast<size_t>(s)] += p[s];
  }
  for (float& v : out) v /= static_cast<float>(H);
}

// The decoder layer whose cross-attention `select` reads: only its weights are computed.
int cross_layer(const AttentionSelect& select, int layers) { return select.layer < 0 ? layers - 1 : select.layer; }

// The layer(s) whose cross-attention a decoding step computes: `select`'s, and with the pointer
// also the last one (its copy distribution): every layer (-1) when those differ.
int step_layer(const AttentionSelect& select, int layers, bool pointer) {
  const int layer = cross_layer(select, layers);
  return pointer && layer != layers - 1 ? -1 : layer;
}

// Rows `rows` (int32 (M)) of ids (N, S) int32 → (M, S).
Tensor take_rows(const Tensor& ids, const Tensor& rows) {
  const int64_t M = rows.numel(), S = ids.dim(1);
  Tensor out = Tensor::empty({M, S}, DType::i32);
  for (int64_t i = 0; i < M; ++i) std::copy_n(ids.i32() + rows.i32()[i] * S, S, out.i32() + i * S);
  return out;
}

}  // namespace

TransformerSeq2Seq::TransformerSeq2Seq(const TransformerConfig& config)
    : config_(validated(config)),
      rng_(config.seed),
      src_embedding(make_embedding(!config_.share_embeddings, config_.src_vocab, config_.d_model, rng_)),
      tgt_embedding(make_embedding(!config_.share_embeddings, config_.tgt_vocab, config_.d_model, rng_)),
      embedding(make_embedding(config_.share_embeddings, config_.tgt_vocab, config_.d_model, rng_)),
      positions(to_string(config_.positions), config_.max_len, config_.d_model, rng_),
      encoder(detail::stack_options(config_, rng_), config_.encoder_layers),
      decoder(detail::stack_options(config_, rng_), config_.decoder_layers),
      generator(config_.tie_output ? nullptr : std::make_unique<nn::Linear>(config_.d_model, config_.tgt_vocab, rng_)),
      dropout_(config_.dropout, rng_.next()) {
  // Drawn after every other weight, so a model without the pointer starts as it always has.
  if (config_.pointer) pointer_gate = std::make_unique<nn::Linear>(3 * config_.d_model, 1, rng_);
  if (embedding) {
    register_module("embedding", *embedding);
  } else {
    register_module("src_embedding", *src_embedding);
    register_module("tgt_embedding", *tgt_embedding);
  }
  register_module("positions", positions);
  register_module("encoder", encoder);
  register_module("decoder", decoder);
  if (generator) register_module("generator", *generator);
  register_module("dropout", dropout_);
  if (pointer_gate) register_module("pointer_gate", *pointer_gate);
}

const nn::Embedding& TransformerSeq2Seq::source_embedding() const { return embedding ? *embedding : *src_embedding; }
const nn::Embedding& TransformerSeq2Seq::target_embedding() const { return embedding ? *embedding : *tgt_embedding; }

Tensor TransformerSeq2Seq::output_logits(const Tensor& h) const {
  return detail::project_vocab(h, generator.get(), target_embedding().weight);
}

AttentionSelect TransformerSeq2Seq::checked_select(const char* op, AttentionSelect select) const {
  const int L = config_.decoder_layers;
  if (select.layer < -1 || select.layer >= L)
    throw ValueError(
        fmt::format("{}: attention layer {} out of range (valid: -1 for the last, 0..{})", op, select.layer, L - 1));
  if (select.head < -1 || select.head >= config_.heads)
    throw ValueError(fmt::format("{}: attention head {} out of range (valid: -1 for the mean, 0..{})", op, select.head,
                                 config_.heads - 1));
  return select;
}

Tensor TransformerSeq2Seq::encode(const Tensor& src, const Tensor& src_lengths,
                                  std::vector<nn::LayerAttention>* weights) {
  ShapeContract c("TransformerSeq2Seq.encode");
  c.check("src", src, {"B", "S"}, DType::i32);
  c.check("src_lengths", src_lengths, {"B"}, DType::i32);
  check_length_values(c.op(), "src_lengths", src_lengths, 1, "S", c["S"]);
  const Tensor x = detail::embed_tokens(source_embedding(), positions, dropout_, src);  // (B, S, D)
  return encoder.forward(x, src_lengths, weights);                                      // (B, S, D)
}

Tensor TransformerSeq2Seq::embed_source(const Tensor& src) const {
  const nn::Embedding& e = source_embedding();
  return scale(e.forward(src), std::sqrt(static_cast<float>(e.weight.dim(1))));  // (B, S, D)
}

Tensor TransformerSeq2Seq::logits_from_source_embeddings(const Tensor& source_embeddings, const Batch& batch) {
  ShapeContract c("TransformerSeq2Seq.logits_from_source_embeddings");
  c.check("source_embeddings", source_embeddings, {"B", "S", "D"}, DType::f32);
  c.check("tgt_in", batch.tgt_in, {"B", "T"}, DType::i32);
  check_length_values(c.op(), "src_lengths", batch.src_lengths, 1, "S", c["S"]);
  const Tensor x = dropout_.forward(positions.forward(source_embeddings, 0));  // (B, S, D)
  const Tensor memory = encoder.forward(x, batch.src_lengths, nullptr);        // (B, S, D)
  // The pointer copies by source ids, which embeddings do not carry: batch.src_ext or an error.
  return teacher_forced_output(memory, batch, batch.src_ext, std::max(config_.tgt_vocab, batch.extended_vocab));
}

Tensor TransformerSeq2Seq::decode_teacher_forced(const Batch& batch, std::vector<nn::LayerAttention>* weights,
                                                 std::vector<nn::LayerAttention>* encoder_weights) {
  ShapeContract c("TransformerSeq2Seq.logits");
  c.check("src", batch.src, {"B", "S"}, DType::i32);
  c.check("tgt_in", batch.tgt_in, {"B", "T"}, DType::i32);
  const Tensor memory = encode(batch.src, batch.src_lengths, encoder_weights);                   // (B, S, D)
  const Tensor y = detail::embed_tokens(target_embedding(), positions, dropout_, batch.tgt_in);  // (B, T, D)
  return decoder.forward(y, memory, batch.src_lengths, weights);                                 // (B, T, D)
}

Tensor TransformerSeq2Seq::logits(const Batch& batch) {
  ShapeContract c("TransformerSeq2Seq.logits");
  c.check("src", batch.src, {"B", "S"}, DType::i32);
  c.check("tgt_in", batch.tgt_in, {"B", "T"}, DType::i32);
  const Tensor memory = encode(batch.src, batch.src_lengths);  // (B, S, D)
  // The pointer's extended ids: the batch's, or the source itself (no OOVs).
  const Tensor& src_ext = batch.src_ext.defined() ? batch.src_ext : batch.src;
  return teacher_forced_output(memory, batch, src_ext, std::max(config_.tgt_vocab, batch.extended_vocab));
}

Tensor TransformerSeq2Seq::loss(const Batch& batch, float label_smoothing) {
  ShapeContract c("TransformerSeq2Seq.loss");
  c.check("tgt_in", batch.tgt_in, {"B", "T"}, DType::i32);
  c.check("tgt_out", batch.tgt_out, {"B", "T"}, DType::i32);
  check_training_memory(config_, c["B"], batch.src.dim(1), c["T"]);
  // Smoothing toward every extended id would put mass on the OOV slots a row's source lacks.
  if (config_.pointer && label_smoothing != 0.0f)
    throw ValueError(fmt::format(
        "TransformerSeq2Seq: label smoothing ({}) does not apply to the pointer-generator; use 0", label_smoothing));
  // With the pointer logits() is log P over the extended vocabulary: cross_entropy is its NLL.
  const Tensor& targets = config_.pointer && batch.tgt_out_ext.defined() ? batch.tgt_out_ext : batch.tgt_out;
  return cross_entropy(logits(batch), targets, {.ignore_index = kPad, .label_smoothing = label_smoothing});
}

std::vector<Tensor> TransformerSeq2Seq::cross_attention(const Batch& batch) { return attention_maps(batch).cross; }

TransformerSeq2Seq::AttentionMaps TransformerSeq2Seq::attention_maps(const Batch& batch) {
  autodiff::NoGradGuard no_grad;
  std::vector<nn::LayerAttention> decoder_weights, encoder_weights;
  decode_teacher_forced(batch, &decoder_weights, &encoder_weights);
  AttentionMaps maps;
  for (const nn::LayerAttention& w : encoder_weights) maps.encoder_self.push_back(w.self_weights);  // (B, H, S, S)
  for (const nn::LayerAttention& w : decoder_weights) {
    maps.decoder_self.push_back(w.self_weights);  // (B, H, T, T)
    maps.cross.push_back(w.cross_weights);        // (B, H, T, S)
  }
  return maps;
}

void TransformerDecodingState::reorder(const Tensor& index) {
  cache.reorder(index);
  if (src_ext.defined()) src_ext = take_rows(src_ext, index);
}

TransformerDecodingState TransformerSeq2Seq::start_decoding(const Tensor& src, const Tensor& src_lengths, int64_t group,
                                                            const Tensor& src_ext, int64_t extended_vocab) {
  TransformerDecodingState state;
  state.memory = encode(src, src_lengths);  // (B, S, D)
  // Row b·group + k is hypothesis k of source row b; the group shares its memory (the cache's
  // group): its cross keys and values are projected once and never reordered.
  state.cache = decoder.start(src_lengths, group);
  state.extended_vocab = pointer_gate ? std::max(config_.tgt_vocab, extended_vocab) : config_.tgt_vocab;
  if (pointer_gate) {
    const int64_t n = src.dim(0) * group;
    std::vector<int32_t> expand(static_cast<size_t>(n));  // row b·group + k reads source row b
    for (int64_t i = 0; i < n; ++i) expand[static_cast<size_t>(i)] = static_cast<int32_t>(i / group);
    state.src_ext = take_rows(src_ext.defined() ? src_ext : src, Tensor::from_vector(expand, {n}));  // (n, S)
  }
  return state;
}

TransformerStepOutput TransformerSeq2Seq::decode_step(const Tensor& tokens, TransformerDecodingState& state,
                                                      AttentionSelect select) {
  select = checked_select("TransformerSeq2Seq.decode_step", select);
  const int64_t n = tokens.numel(), t = state.cache.steps;
  const bool pointer = pointer_gate != nullptr;
  const Tensor ids = in_vocabulary(tokens, config_.tgt_vocab).reshape({n, 1});  // a copied OOV is fed back as UNK
  const Tensor x = detail::embed_tokens(target_embedding(), positions, dropout_, ids, t);  // (n, 1, D)
  TransformerStepOutput out;
  // The memory is read on the first step only (the cache then holds its keys and values).
  const Tensor h = decoder.step(x, t == 0 ? state.memory : Tensor(), state.cache, &out.weights,
                                step_layer(select, config_.decoder_layers, pointer));  // (n, 1, D)
  out.scores = pointer ? pointer_output(output_logits(h), h, x, out.weights.back(), state.src_ext, state.extended_vocab,
                                        &out.p_gen)
                       : output_logits(h);
  return out;
}

DecodeResult TransformerSeq2Seq::greedy(const Tensor& src, const Tensor& src_lengths, int max_len,
                                        AttentionSelect select, const Tensor& src_ext, int64_t extended_vocab) {
  if (max_len < 1) throw ValueError("TransformerSeq2Seq.greedy: max_len must be >= 1, got " + std::to_string(max_len));
  select = checked_select("TransformerSeq2Seq.greedy", select);
  autodiff::NoGradGuard no_grad;
  ops::FrozenWeights frozen_weights;                                                // packed fp32 weights for the steps
  const int steps = static_cast<int>(std::min<int64_t>(max_len, config_.max_len));  // positions end at max_len
  check_decoding_memory(config_, src.dim(0), src.dim(1), steps, true);
  TransformerDecodingState state = start_decoding(src, src_lengths, 1, src_ext, extended_vocab);
  const int64_t B = src.dim(0), Vx = state.extended_vocab;  // the ids argmax chooses from
  const bool pointer = pointer_gate != nullptr;
  DecodeResult result;
  result.tokens.resize(static_cast<size_t>(B));
  result.attention.resize(static_cast<size_t>(B));
  if (pointer) result.copy.resize(static_cast<size_t>(B));
  // The rows still decoding (original row indices); finished rows leave the batch.
  std::vector<int32_t> active(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) active[static_cast<size_t>(b)] = static_cast<int32_t>(b);
  std::vector<int32_t> prev(static_cast<size_t>(B), kBos);
  std::vector<float> w;
  for (int t = 0; t < steps && !active.empty(); ++t) {
    const int64_t n = static_cast<int64_t>(active.size());
    // (n, 1, Vx): log P with the pointer, else logits (n, 1, V)
    const TransformerStepOutput step = decode_step(Tensor::from_vector(prev, {n}), state, select);
    std::vector<int32_t> keep;
    for (int64_t i = 0; i < n; ++i) {
      const size_t b = static_cast<size_t>(active[static_cast<size_t>(i)]);
      const int32_t best = argmax(step.scores.f32() + i * Vx, Vx);
      result.tokens[b].push_back(best);
      if (pointer) result.copy[b].push_back(1.0f - step.p_gen.f32()[i]);
      selected_weights(step.weights, select, i, w);
      result.attention[b].push_back(w);
      if (best != kEos) keep.push_back(static_cast<int32_t>(i));
      prev[static_cast<size_t>(i)] = best;
    }
    if (static_cast<int64_t>(keep.size()) == n) continue;
    // Some rows ended: they leave the decoding state.
    std::vector<int32_t> next_active, next_prev;
    for (int32_t i : keep) {
      next_active.push_back(active[static_cast<size_t>(i)]);
      next_prev.push_back(prev[static_cast<size_t>(i)]);
    }
    active.swap(next_active);
    prev.swap(next_prev);
    if (active.empty()) break;
    state.reorder(Tensor::from_vector(keep, {static_cast<int64_t>(keep.size())}));
  }
  return result;
}

// Batched beam search (bookkeeping in beam_search.h) over the decoding state: it is reordered
// to the surviving hypotheses after each step, as the RNN decoder's. Weights per step: the
// cross-attention chosen by `select`.
DecodeResult TransformerSeq2Seq::beam(const Tensor& src, const Tensor& src_lengths, const BeamOptions& options,
                                      AttentionSelect select, const Tensor& src_ext, int64_t extended_vocab) {
  const char* op = "TransformerSeq2Seq.beam";
  const int64_t B = src.dim(0), S = src.dim(1), V = config_.tgt_vocab;
  // Finished source rows leave the decoder batch (live_only): the state drops their rows.
  detail::BeamSearch search(op, B, options, S, detail::beam_source(src_lengths, S), true);
  select = checked_select(op, select);
  autodiff::NoGradGuard no_grad;
  ops::FrozenWeights frozen_weights;  // packed fp32 weights for the steps
  const int K = options.width;
  const int64_t BK = search.rows();
  const int max_steps = static_cast<int>(std::min<int64_t>(options.max_len, config_.max_len));
  check_decoding_memory(config_, BK, S, max_steps, true);
  TransformerDecodingState state = start_decoding(src, src_lengths, K, src_ext, extended_vocab);
  const bool pointer = pointer_gate != nullptr;
  const int64_t Vx = state.extended_vocab;
  std::vector<float> copy;                                          // 1 − p_gen per live hypothesis; the pointer only
  std::vector<float> step_weights(static_cast<size_t>(BK * S)), w;  // (n, S): the selected head(s)
  for (int t = 0; t < max_steps; ++t) {
    const Tensor tokens = search.next_tokens();
    const int64_t n = tokens.numel();  // L·K: the live rows' hypotheses
    const TransformerStepOutput step = decode_step(tokens, state, select);
    // (n, Vx) with the pointer, else (n, V)
    const Tensor logp = pointer ? step.scores.reshape({n, Vx}) : log_softmax(step.scores).reshape({n, V});
    for (int64_t i = 0; i < n; ++i) {
      selected_weights(step.weights, select, i, w);
      std::copy(w.begin(), w.end(), step_weights.begin() + i * S);
    }
    if (pointer) copy.assign(step.p_gen.f32(), step.p_gen.f32() + n);
    for (float& p : copy) p = 1.0f - p;
    if (!search.advance(logp, step_weights.data(), pointer ? copy.data() : nullptr)) break;
    search.reorder(state);
  }
  return search.result();
}

}  // namespace attn::models
