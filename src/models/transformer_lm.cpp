// TransformerLM: decoder-only causal language model; next-token loss; sampling with the
// CausalTransformer key/value cache.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/models/memory_estimate.h"
#include "attn/models/transformer.h"
#include "attn/ops/loss.h"
#include "attn/ops/reduce.h"
#include "attn/shape.h"
#include "transformer_common.h"

namespace attn::models {
namespace {

const TransformerConfig& validated(const TransformerConfig& c) {
  c.validate();
  if (c.pointer) throw ValueError("TransformerLM: pointer applies to the encoder-decoder (TransformerSeq2Seq) only");
  if (c.tgt_vocab < 2) throw ValueError(fmt::format("TransformerLM: tgt_vocab must be >= 2, got {}", c.tgt_vocab));
  if (c.decoder_layers < 1)
    throw ValueError(fmt::format("TransformerLM: decoder_layers must be >= 1, got {}", c.decoder_layers));
  TransformerConfig used = c;  // an LM has no encoder
  used.encoder_layers = 0;
  used.src_vocab = 0;
  used.classes = 0;
  check_parameter_memory(used, "Transformer LM");
  return c;
}

}  // namespace

TransformerLM::TransformerLM(const TransformerConfig& config)
    : config_(validated(config)),
      rng_(config.seed),
      embedding(config_.tgt_vocab, config_.d_model, rng_, kPad),
      positions(to_string(config_.positions), config_.max_len, config_.d_model, rng_),
      decoder(detail::stack_options(config_, rng_), config_.decoder_layers),
      generator(config_.tie_output ? nullptr : std::make_unique<nn::Linear>(config_.d_model, config_.tgt_vocab, rng_)),
      dropout_(config_.dropout, rng_.next()) {
  detail::init_scaled_embedding(embedding, rng_);
  register_module("embedding", embedding);
  register_module("positions", positions);
  register_module("decoder", decoder);
  if (generator) register_module("generator", *generator);
  register_module("dropout", dropout_);
}

Tensor TransformerLM::output_logits(const Tensor& h) const {
  return detail::project_vocab(h, generator.get(), embedding.weight);
}

Tensor TransformerLM::logits(const Tensor& ids, const Tensor& lengths) {
  ShapeContract c("TransformerLM.logits");
  c.check("ids", ids, {"B", "T"}, DType::i32);
  if (lengths.defined()) {
    c.check("lengths", lengths, {"B"}, DType::i32);
    check_length_values(c.op(), "lengths", lengths, 1, "T", c["T"]);
  }
  const Tensor x = detail::embed_tokens(embedding, positions, dropout_, ids);  // (B, T, D)
  return output_logits(decoder.forward(x, lengths));                           // (B, T, V)
}

std::vector<Tensor> TransformerLM::self_attention(const Tensor& ids) {
  ShapeContract c("TransformerLM.self_attention");
  c.check("ids", ids, {"B", "T"}, DType::i32);
  autodiff::NoGradGuard no_grad;
  std::vector<nn::LayerAttention> weights;
  decoder.forward(detail::embed_tokens(embedding, positions, dropout_, ids), Tensor(), &weights);
  std::vector<Tensor> out;
  for (const nn::LayerAttention& w : weights) out.push_back(w.self_weights);  // (B, H, T, T)
  return out;
}

Tensor TransformerLM::loss(const Tensor& ids) {
  ShapeContract c("TransformerLM.loss");
  c.check("ids", ids, {"B", "T"}, DType::i32);
  const int64_t B = c["B"], T = c["T"];
  if (T < 2)
    throw ValueError(fmt::format("TransformerLM.loss: 'ids' needs T >= 2 (inputs and next tokens), got T={}", T));
  check_training_memory(config_, B, 0, T);
  // inputs = ids[:, :-1], targets = ids[:, 1:]  (B, T - 1). A causal model never lets a real
  // position see the padding after it, and PAD targets are ignored.
  Tensor inputs = Tensor::empty({B, T - 1}, DType::i32);
  Tensor targets = Tensor::empty({B, T - 1}, DType::i32);
  const int32_t* p = ids.i32();
  for (int64_t b = 0; b < B; ++b) {
    std::copy(p + b * T, p + b * T + T - 1, inputs.i32() + b * (T - 1));
    std::copy(p + b * T + 1, p + b * T + T, targets.i32() + b * (T - 1));
  }
  return cross_entropy(logits(inputs), targets, {.ignore_index = kPad});
}

std::vector<int32_t> TransformerLM::sample(const std::vector<int32_t>& prefix, const SampleOptions& options) {
  const char* op = "TransformerLM.sample";
  const int64_t V = config_.tgt_vocab;
  if (prefix.empty()) throw ValueError(fmt::format("{}: the prefix is empty (give at least one id)", op));
  if (static_cast<int64_t>(prefix.size()) > config_.max_len)
    throw ValueError(fmt::format("{}: prefix of {} ids is longer than max_len={}", op, prefix.size(), config_.max_len));
  for (size_t i = 0; i < prefix.size(); ++i)
    if (prefix[i] < 0 || prefix[i] >= V)
      throw ValueError(fmt::format("{}: prefix[{}] = {} outside the vocabulary [0, {})", op, i, prefix[i], V));
  if (options.max_len < 1) throw ValueError(fmt::format("{}: max_len must be >= 1, got {}", op, options.max_len));
  if (!(options.temperature >= 0.0f) || !std::isfinite(options.temperature))
    throw ValueError(fmt::format("{}: temperature must be finite and >= 0, got {}", op, options.temperature));
  if (options.top_k < 0) throw ValueError(fmt::format("{}: top_k must be >= 0, got {}", op, options.top_k));
  autodiff::NoGradGuard no_grad;
  Rng rng(options.seed);
  // Positions end at config.max_len: the last sampled token is never fed back.
  const int64_t limit = std::min<int64_t>(options.max_len, config_.max_len - static_cast<int64_t>(prefix.size()) + 1);
  nn::KvCache cache = decoder.start(1);
  std::vector<int32_t> out;
  std::vector<int32_t> order(static_cast<size_t>(V));
  std::vector<double> prob(static_cast<size_t>(V));
  int32_t next = -1;
  int64_t position = 0;
  // Feeds one id at `position`; returns the logits (1, 1, V) of the next token.
  auto feed = [&](int32_t id) {
    const Tensor ids = Tensor::from_vector(std::vector<int32_t>{id}, {1, 1});
    const Tensor x = detail::embed_tokens(embedding, positions, dropout_, ids, position++);  // (1, 1, D)
    return output_logits(decoder.step(x, cache));                                            // (1, 1, V)
  };
  Tensor l;
  for (int32_t id : prefix) l = feed(id);
  for (int64_t n = 0; n < limit; ++n) {
    if (n > 0) l = feed(next);
    const float* row = l.f32();
    if (options.temperature == 0.0f) {
      next = argmax(row, V);
    } else {
      // The top_k ids (value desc, then id asc), or all of them; softmax(row / τ) over those.
      std::iota(order.begin(), order.end(), 0);
      const int64_t k = options.top_k > 0 ? std::min<int64_t>(options.top_k, V) : V;
      if (k < V)
        std::partial_sort(order.begin(), order.begin() + k, order.end(),
                          [row](int32_t a, int32_t b) { return row[a] != row[b] ? row[a] > row[b] : a < b; });
      double top = -INFINITY;
      for (int64_t i = 0; i < k; ++i) top = std::max(top, static_cast<double>(row[order[static_cast<size_t>(i)]]));
      double total = 0.0;
      for (int64_t i = 0; i < k; ++i) {
        prob[static_cast<size_t>(i)] =
            std::exp((static_cast<double>(row[order[static_cast<size_t>(i)]]) - top) / options.temperature);
        total += prob[static_cast<size_t>(i)];
      }
      const double u = static_cast<double>(rng.uniform()) * total;
      double acc = 0.0;
      next = order[static_cast<size_t>(k - 1)];
      for (int64_t i = 0; i < k; ++i) {
        acc += prob[static_cast<size_t>(i)];
        if (u < acc) {
          next = order[static_cast<size_t>(i)];
          break;
        }
      }
    }
    out.push_back(next);
    if (next == options.stop_id) break;
  }
  return out;
}

}  // namespace attn::models
