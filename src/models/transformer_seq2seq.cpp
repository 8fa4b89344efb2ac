// TransformerSeq2Seq: teacher-forced logits and loss, greedy and beam decoding with the
// decoder's key/value cache, cross-attention for inspection.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/models/transformer.h"
#include "attn/ops/loss.h"
#include "attn/ops/select.h"
#include "attn/ops/softmax.h"
#include "attn/shape.h"
#include "transformer_common.h"

namespace attn::models {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

const TransformerConfig& validated(const TransformerConfig& c) {
  c.validate();
  if (c.tgt_vocab <= data::kEos)
    throw ValueError(fmt::format("TransformerSeq2Seq: tgt_vocab must be > {} (PAD, BOS, EOS are 0, 1, 2), got {}",
                                 data::kEos, c.tgt_vocab));
  if (c.src_vocab < 1) throw ValueError(fmt::format("TransformerSeq2Seq: src_vocab must be >= 1, got {}", c.src_vocab));
  if (c.encoder_layers < 1 || c.decoder_layers < 1)
    throw ValueError(fmt::format("TransformerSeq2Seq: encoder_layers and decoder_layers must be >= 1, got {} and {}",
                                 c.encoder_layers, c.decoder_layers));
  return c;
}

std::unique_ptr<nn::Embedding> make_embedding(bool make, int64_t vocab, int64_t dim, Rng& rng) {
  if (!make) return nullptr;
  auto e = std::make_unique<nn::Embedding>(vocab, dim, rng, data::kPad);
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

}  // namespace

TransformerSeq2Seq::TransformerSeq2Seq(const TransformerConfig& config)
    : config_(validated(config)),
      rng_(config.seed),
      src_embedding(make_embedding(!config_.share_embeddings, config_.src_vocab, config_.d_model, rng_)),
      tgt_embedding(make_embedding(!config_.share_embeddings, config_.tgt_vocab, config_.d_model, rng_)),
      embedding(make_embedding(config_.share_embeddings, config_.tgt_vocab, config_.d_model, rng_)),
      positions(config_.positions, config_.max_len, config_.d_model, rng_),
      encoder(detail::stack_options(config_, rng_), config_.encoder_layers),
      decoder(detail::stack_options(config_, rng_), config_.decoder_layers),
      generator(config_.tie_output ? nullptr : std::make_unique<nn::Linear>(config_.d_model, config_.tgt_vocab, rng_)),
      dropout_(config_.dropout, rng_.next()) {
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

Tensor TransformerSeq2Seq::encode(const Tensor& src, const Tensor& src_lengths) {
  ShapeContract c("TransformerSeq2Seq.encode");
  c.check("src", src, {"B", "S"}, DType::i32);
  c.check("src_lengths", src_lengths, {"B"}, DType::i32);
  detail::check_lengths(c.op(), "src_lengths", src_lengths, 1, "S", c["S"]);
  const Tensor x = detail::embed_tokens(source_embedding(), positions, dropout_, src);  // (B, S, D)
  return encoder.forward(x, src_lengths);                                               // (B, S, D)
}

Tensor TransformerSeq2Seq::decode_teacher_forced(const data::Batch& batch, std::vector<nn::LayerAttention>* weights) {
  ShapeContract c("TransformerSeq2Seq.logits");
  c.check("src", batch.src, {"B", "S"}, DType::i32);
  c.check("tgt_in", batch.tgt_in, {"B", "T"}, DType::i32);
  const Tensor memory = encode(batch.src, batch.src_lengths);                                    // (B, S, D)
  const Tensor y = detail::embed_tokens(target_embedding(), positions, dropout_, batch.tgt_in);  // (B, T, D)
  return decoder.forward(y, memory, batch.src_lengths, weights);                                 // (B, T, D)
}

Tensor TransformerSeq2Seq::logits(const data::Batch& batch) {
  return output_logits(decode_teacher_forced(batch, nullptr));  // (B, T, V)
}

Tensor TransformerSeq2Seq::loss(const data::Batch& batch, float label_smoothing) {
  ShapeContract c("TransformerSeq2Seq.loss");
  c.check("tgt_in", batch.tgt_in, {"B", "T"}, DType::i32);
  c.check("tgt_out", batch.tgt_out, {"B", "T"}, DType::i32);
  return cross_entropy(logits(batch), batch.tgt_out, {.ignore_index = data::kPad, .label_smoothing = label_smoothing});
}

std::vector<Tensor> TransformerSeq2Seq::cross_attention(const data::Batch& batch) {
  autodiff::NoGradGuard no_grad;
  std::vector<nn::LayerAttention> weights;
  decode_teacher_forced(batch, &weights);
  std::vector<Tensor> out;
  for (const nn::LayerAttention& w : weights) out.push_back(w.cross_weights);  // (B, H, T, S)
  return out;
}

DecodeResult TransformerSeq2Seq::greedy(const Tensor& src, const Tensor& src_lengths, int max_len,
                                        AttentionSelect select) {
  if (max_len < 1) throw ValueError("TransformerSeq2Seq.greedy: max_len must be >= 1, got " + std::to_string(max_len));
  select = checked_select("TransformerSeq2Seq.greedy", select);
  autodiff::NoGradGuard no_grad;
  const Tensor memory = encode(src, src_lengths);  // (B, S, D)
  const int64_t B = src.dim(0), V = config_.tgt_vocab;
  const int steps = static_cast<int>(std::min<int64_t>(max_len, config_.max_len));  // positions end at max_len
  DecodeResult result;
  result.tokens.resize(static_cast<size_t>(B));
  result.attention.resize(static_cast<size_t>(B));
  nn::KvCache cache = decoder.start(src_lengths);
  // The rows still decoding (original row indices); finished rows leave the batch.
  std::vector<int32_t> active(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) active[static_cast<size_t>(b)] = static_cast<int32_t>(b);
  std::vector<int32_t> prev(static_cast<size_t>(B), data::kBos);
  std::vector<nn::LayerAttention> weights;
  std::vector<float> w;
  for (int t = 0; t < steps && !active.empty(); ++t) {
    const int64_t n = static_cast<int64_t>(active.size());
    const Tensor ids = Tensor::from_vector(prev, {n, 1});
    const Tensor x = detail::embed_tokens(target_embedding(), positions, dropout_, ids, t);  // (n, 1, D)
    weights.clear();
    // The memory is read on the first step only (the cache then holds its keys and values).
    const Tensor h = decoder.step(x, t == 0 ? memory : Tensor(), cache, &weights);  // (n, 1, D)
    const Tensor l = output_logits(h);                                              // (n, 1, V)
    std::vector<int32_t> keep;
    for (int64_t i = 0; i < n; ++i) {
      const size_t b = static_cast<size_t>(active[static_cast<size_t>(i)]);
      const int32_t best = detail::argmax(l.f32() + i * V, V);
      result.tokens[b].push_back(best);
      selected_weights(weights, select, i, w);
      result.attention[b].push_back(w);
      if (best != data::kEos) keep.push_back(static_cast<int32_t>(i));
      prev[static_cast<size_t>(i)] = best;
    }
    if (static_cast<int64_t>(keep.size()) == n) continue;
    // Some rows ended: drop them from the cache.
    std::vector<int32_t> next_active, next_prev;
    for (int32_t i : keep) {
      next_active.push_back(active[static_cast<size_t>(i)]);
      next_prev.push_back(prev[static_cast<size_t>(i)]);
    }
    active.swap(next_active);
    prev.swap(next_prev);
    if (active.empty()) break;
    const Tensor rows = Tensor::from_vector(keep, {static_cast<int64_t>(keep.size())});
    cache.select_rows(rows);
  }
  return result;
}

namespace {

struct Finished {
  float normalized;
  int step;    // the step that produced EOS
  int parent;  // beam index (within the row) of the hypothesis it extended
};

struct Candidate {
  float score;
  int beam;
  int token;
};

}  // namespace

// Batched beam search, bookkeeping as Seq2Seq::beam (src/models/beam.cpp): B rows × K
// hypotheses step together as B·K decoder rows; the best 2K candidates of a row are visited
// in order (score desc, then hypothesis and token asc); EOS candidates finish with score
// raw / lp(len), lp(len) = ((5 + len) / 6)^α; a row stops when no alive hypothesis can beat
// its best finished one. The KV cache follows the surviving hypotheses (select_rows).
DecodeResult TransformerSeq2Seq::beam(const Tensor& src, const Tensor& src_lengths, const BeamOptions& options,
                                      AttentionSelect select) {
  const char* op = "TransformerSeq2Seq.beam";
  if (options.width < 1) throw ValueError(fmt::format("{}: width must be >= 1, got {}", op, options.width));
  if (options.max_len < 1) throw ValueError(fmt::format("{}: max_len must be >= 1, got {}", op, options.max_len));
  if (!(options.length_penalty >= 0.0f) || !std::isfinite(options.length_penalty))
    throw ValueError(fmt::format("{}: length_penalty must be finite and >= 0, got {}", op, options.length_penalty));
  select = checked_select(op, select);
  autodiff::NoGradGuard no_grad;
  const int K = options.width;
  const float alpha = options.length_penalty;
  const int max_steps = static_cast<int>(std::min<int64_t>(options.max_len, config_.max_len));
  auto lp = [alpha](int len) { return alpha == 0.0f ? 1.0f : std::pow((5.0f + len) / 6.0f, alpha); };

  const Tensor memory_b = encode(src, src_lengths);  // (B, S, D)
  const int64_t B = src.dim(0), S = src.dim(1), BK = B * K, V = config_.tgt_vocab;
  // Row b*K + k is hypothesis k of source row b.
  Tensor expand = Tensor::empty({BK}, DType::i32);
  Tensor lengths = Tensor::empty({BK}, DType::i32);
  for (int64_t i = 0; i < BK; ++i) {
    expand.i32()[i] = static_cast<int32_t>(i / K);
    lengths.i32()[i] = src_lengths.i32()[i / K];
  }
  const Tensor memory = gather_rows(memory_b, expand);  // (BK, S, D): reordering stays within a row
  nn::KvCache cache = decoder.start(lengths);

  std::vector<float> score(static_cast<size_t>(BK), kNegInf);  // raw log-prob of alive hypotheses
  for (int64_t b = 0; b < B; ++b) score[static_cast<size_t>(b * K)] = 0.0f;
  std::vector<std::vector<int32_t>> tokens, parents;  // per step, per new beam (BK)
  std::vector<std::vector<float>> step_weights;       // per step, (BK, S) by source beam
  std::vector<std::vector<Finished>> finished(static_cast<size_t>(B));
  std::vector<char> done(static_cast<size_t>(B), 0);
  std::vector<int32_t> prev(static_cast<size_t>(BK), data::kBos);
  Tensor reorder = Tensor::empty({BK}, DType::i32);
  std::vector<Candidate> cands;
  cands.reserve(static_cast<size_t>(K * V));
  std::vector<nn::LayerAttention> weights;
  std::vector<float> w;
  int steps = 0;
  for (int t = 0; t < max_steps; ++t) {
    const Tensor ids = Tensor::from_vector(prev, {BK, 1});
    const Tensor x = detail::embed_tokens(target_embedding(), positions, dropout_, ids, t);  // (BK, 1, D)
    weights.clear();
    const Tensor h = decoder.step(x, memory, cache, &weights);           // (BK, 1, D)
    const Tensor logp = log_softmax(output_logits(h)).reshape({BK, V});  // (BK, V)
    steps = t + 1;
    step_weights.emplace_back(static_cast<size_t>(BK * S));
    for (int64_t i = 0; i < BK; ++i) {
      selected_weights(weights, select, i, w);
      std::copy(w.begin(), w.end(), step_weights.back().begin() + i * S);
    }
    tokens.emplace_back(static_cast<size_t>(BK), data::kPad);
    parents.emplace_back(static_cast<size_t>(BK), 0);
    std::vector<int32_t>& tok = tokens.back();
    std::vector<int32_t>& par = parents.back();
    std::vector<float> new_score(static_cast<size_t>(BK), kNegInf);
    bool all_done = true;
    for (int64_t b = 0; b < B; ++b) {
      for (int k = 0; k < K; ++k) par[static_cast<size_t>(b * K + k)] = static_cast<int32_t>(b * K + k);
      if (done[static_cast<size_t>(b)]) continue;
      cands.clear();
      for (int k = 0; k < K; ++k) {
        const float base = score[static_cast<size_t>(b * K + k)];
        if (base == kNegInf) continue;
        const float* row = logp.f32() + (b * K + k) * V;
        for (int v = 0; v < V; ++v) cands.push_back({base + row[v], k, v});
      }
      const size_t top = std::min(cands.size(), static_cast<size_t>(2 * K));
      std::partial_sort(cands.begin(), cands.begin() + static_cast<std::ptrdiff_t>(top), cands.end(),
                        [](const Candidate& x, const Candidate& y) {
                          if (x.score != y.score) return x.score > y.score;
                          if (x.beam != y.beam) return x.beam < y.beam;
                          return x.token < y.token;
                        });
      int alive = 0;
      for (size_t i = 0; i < top && alive < K; ++i) {
        const Candidate& c = cands[i];
        if (c.score == kNegInf) break;
        if (c.token == data::kEos) {
          finished[static_cast<size_t>(b)].push_back({c.score / lp(t + 1), t, c.beam});
        } else {
          const size_t j = static_cast<size_t>(b * K + alive);
          tok[j] = c.token;
          par[j] = static_cast<int32_t>(b * K + c.beam);
          new_score[j] = c.score;
          ++alive;
        }
      }
      float best_alive = kNegInf;
      for (int k = 0; k < alive; ++k) best_alive = std::max(best_alive, new_score[static_cast<size_t>(b * K + k)]);
      float best_finished = kNegInf;
      for (const Finished& f : finished[static_cast<size_t>(b)]) best_finished = std::max(best_finished, f.normalized);
      const float bound = best_alive / lp(options.max_len);
      const float reachable = alpha == 0.0f ? best_alive : std::max(bound, best_alive / lp(t + 2));
      if (alive == 0 || (!finished[static_cast<size_t>(b)].empty() && best_finished >= reachable)) {
        done[static_cast<size_t>(b)] = 1;
        for (int k = 0; k < K; ++k) new_score[static_cast<size_t>(b * K + k)] = kNegInf;
      } else {
        all_done = false;
      }
    }
    score.swap(new_score);
    if (all_done) break;
    for (int64_t i = 0; i < BK; ++i) {
      reorder.i32()[i] = par[static_cast<size_t>(i)];
      prev[static_cast<size_t>(i)] = tok[static_cast<size_t>(i)];
    }
    cache.select_rows(reorder);
  }

  // Rebuild the winner of each row from the backpointers.
  DecodeResult result;
  result.tokens.resize(static_cast<size_t>(B));
  result.attention.resize(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    int last_step;
    bool eos = false;
    int beam_at;
    const std::vector<Finished>& fin = finished[static_cast<size_t>(b)];
    if (!fin.empty()) {
      const Finished* best = &fin[0];
      for (const Finished& f : fin)
        if (f.normalized > best->normalized) best = &f;
      last_step = best->step;
      eos = true;
      beam_at = static_cast<int>(b * K + best->parent);
    } else {
      // No EOS within max_len: the best alive hypothesis of the last step.
      last_step = steps - 1;
      beam_at = static_cast<int>(b * K);
      for (int k = 1; k < K; ++k)
        if (score[static_cast<size_t>(b * K + k)] > score[static_cast<size_t>(beam_at)])
          beam_at = static_cast<int>(b * K + k);
    }
    std::vector<int32_t> out;
    std::vector<std::vector<float>> att;
    int t = last_step;
    int j = beam_at;
    auto weights_of = [&](int step, int beam) {
      const auto begin = step_weights[static_cast<size_t>(step)].begin() + static_cast<int64_t>(beam) * S;
      return std::vector<float>(begin, begin + S);
    };
    if (eos) {
      out.push_back(data::kEos);
      att.push_back(weights_of(t, j));
      --t;
    }
    for (; t >= 0; --t) {
      const int parent = parents[static_cast<size_t>(t)][static_cast<size_t>(j)];
      out.push_back(tokens[static_cast<size_t>(t)][static_cast<size_t>(j)]);
      att.push_back(weights_of(t, parent));
      j = parent;
    }
    std::reverse(out.begin(), out.end());
    std::reverse(att.begin(), att.end());
    result.tokens[static_cast<size_t>(b)] = std::move(out);
    result.attention[static_cast<size_t>(b)] = std::move(att);
  }
  return result;
}

}  // namespace attn::models
