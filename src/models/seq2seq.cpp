// Seq2Seq: teacher-forced loss and greedy decoding.
#include "attn/models/seq2seq.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <functional>
#include <iterator>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/models/memory_estimate.h"
#include "attn/ops/elementwise.h"
#include "attn/ops/gemm.h"
#include "attn/ops/loss.h"
#include "attn/ops/reduce.h"
#include "attn/ops/shape_ops.h"
#include "attn/ops/softmax.h"
#include "attn/parallel.h"
#include "rnn_decoding.h"

namespace attn::models {
Seq2Seq::Seq2Seq(const Seq2SeqConfig& config)
    : config_(validated_config(config)),
      rng_(config.seed),
      encoder(config_, rng_),
      decoder(config_, encoder.output_size(), rng_) {
  register_module("encoder", encoder);
  register_module("decoder", decoder);
}

namespace {
// The pointer's source in extended ids and Vx: the batch's, or the source itself (no OOVs).
Tensor source_ext(const Tensor& src, const Tensor& src_ext) { return src_ext.defined() ? src_ext : src; }
int64_t vocab_ext(int64_t V, int64_t extended_vocab) { return std::max(V, extended_vocab); }
}  // namespace

DecoderOutput Seq2Seq::forward(const Batch& batch) {
  const EncoderOutput enc = encoder.forward(batch.src, batch.src_lengths);
  if (!config_.pointer) return decoder.forward(batch.tgt_in, enc, batch.src_lengths);
  return decoder.forward(batch.tgt_in, enc, batch.src_lengths, source_ext(batch.src, batch.src_ext),
                         vocab_ext(config_.vocab, batch.extended_vocab));
}

Tensor Seq2Seq::logits(const Batch& batch) { return forward(batch).logits; }

Seq2Seq::Loss Seq2Seq::loss_terms(const Batch& batch, float label_smoothing) {
  check_training_memory(config_, batch.src.dim(0), batch.src.dim(1), batch.tgt_out.dim(1));
  // Smoothing toward every extended id would put mass on the OOV slots a row's source lacks.
  if (config_.pointer && label_smoothing != 0.0f)
    throw ValueError(
        fmt::format("Seq2Seq: label smoothing ({}) does not apply to the pointer-generator; use 0", label_smoothing));
  const DecoderOutput out = forward(batch);
  // With the pointer out.logits is log P over the extended vocabulary: cross_entropy is its NLL.
  const Tensor& targets = config_.pointer && batch.tgt_out_ext.defined() ? batch.tgt_out_ext : batch.tgt_out;
  const Tensor ce =
      cross_entropy(out.logits, time_major_ids(targets), {.ignore_index = kPad, .label_smoothing = label_smoothing});
  return {with_coverage(with_reinforce(ce, out, batch), out, batch), ce, out.logits};
}

Tensor Seq2Seq::with_coverage(const Tensor& loss, const DecoderOutput& out, const Batch& batch) const {
  if (!out.coverage_terms.defined() || config_.coverage_loss == 0.0f) return loss;
  const Tensor targets = time_major_ids(batch.tgt_out);  // (T, B)
  const int64_t n = targets.numel();
  Tensor real = Tensor::empty(targets.shape());  // 1 for a target token, 0 for padding
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    real.f32()[i] = targets.i32()[i] == kPad ? 0.0f : 1.0f;
    count += targets.i32()[i] != kPad;
  }
  if (count == 0) return loss;
  const Tensor per_token = scale(sum(mul(out.coverage_terms, real)), 1.0f / static_cast<float>(count));
  return add(loss, scale(per_token, config_.coverage_loss));
}

Tensor Seq2Seq::loss(const Batch& batch, float label_smoothing) { return loss_terms(batch, label_smoothing).loss; }

Tensor Seq2Seq::with_reinforce(const Tensor& ce, const DecoderOutput& out, const Batch& batch) {
  if (!out.hard_log_probs.defined() || !autodiff::grad_enabled()) return ce;
  // REINFORCE for hard attention: reward r(t, b) = log p(target | step t), no gradient.
  const Tensor& l = out.logits;                          // (T, B, V)
  const Tensor targets = time_major_ids(batch.tgt_out);  // (T, B)
  const Tensor& log_probs = out.hard_log_probs;          // (T, B)
  const int64_t T = targets.dim(0), B = targets.dim(1), V = l.dim(2);
  Tensor log_likelihood;  // (T, B, V)
  {
    autodiff::NoGradGuard no_grad;
    log_likelihood = log_softmax(l);
  }
  Tensor rewards = Tensor::empty({T, B});
  ReinforceBaseline& baseline = decoder.hard_baseline;
  double reward_sum = 0.0;
  int64_t real = 0;
  for (int64_t i = 0; i < T * B; ++i) {
    const int32_t y = targets.i32()[i];
    if (y == kPad) {
      rewards.f32()[i] = baseline.value;  // zero advantage: padding teaches nothing
      continue;
    }
    rewards.f32()[i] = log_likelihood.f32()[i * V + y];
    reward_sum += rewards.f32()[i];
    ++real;
  }
  const Tensor reinforce = reinforce_loss(log_probs, rewards, baseline);
  if (real > 0) baseline.update(static_cast<float>(reward_sum / static_cast<double>(real)));
  return add(ce, reinforce);
}

DecodeResult Seq2Seq::greedy(const Tensor& src, const Tensor& src_lengths, int max_len, const Tensor& src_ext,
                             int64_t extended_vocab) {
  if (max_len < 1) throw ValueError("greedy: max_len must be >= 1, got " + std::to_string(max_len));
  check_decoding_memory(config_, src.dim(0), src.dim(1), max_len);
  autodiff::NoGradGuard no_grad;
  const Tensor ext = config_.pointer ? source_ext(src, src_ext) : Tensor();  // (B, S) or undefined
  const auto decode = [&](const Tensor& rows, const Tensor& lengths, const Tensor& rows_ext) {
    autodiff::NoGradGuard no_grad_here;  // the guard is per thread
    const EncoderOutput enc = encoder.forward(rows, lengths);
    return detail::greedy_decode(decoder, config_, enc, lengths, max_len, rows_ext, extended_vocab);
  };
  // In training mode dropout and sampling draw from the model's random streams, whose order
  // a split would change; a mismatched batch goes through whole, to the encoder's shape error.
  const int64_t B = src.rank() == 2 ? src.dim(0) : 0;
  const bool rows_agree = B > 0 && src_lengths.rank() == 1 && src_lengths.dim(0) == B &&
                          src_lengths.dtype() == DType::i32 && (!ext.defined() || (ext.rank() == 2 && ext.dim(0) == B));
  if (is_training() || !rows_agree) return decode(src, src_lengths, ext);
  check_lengths_in_range("Encoder", "src_lengths", src_lengths, src.dim(1));  // the whole batch's row index
  return detail::decode_row_blocks(B, [&](int64_t lo, int64_t hi) {           // rows [lo, hi)
    return decode(src.slice(lo, hi), src_lengths.slice(lo, hi), ext.defined() ? ext.slice(lo, hi) : Tensor());
  });
}

namespace detail {

int64_t row_block_count(int64_t B) { return std::min<int64_t>(num_threads(), B / kMinRowsPerBlock); }

DecodeResult decode_row_blocks(int64_t B, const std::function<DecodeResult(int64_t, int64_t)>& decode_rows) {
  const int64_t blocks = row_block_count(B);
  if (blocks <= 1) return decode_rows(0, B);
  std::vector<DecodeResult> parts(static_cast<size_t>(blocks));
  std::vector<std::exception_ptr> errors(static_cast<size_t>(blocks));
  parallel_for(0, blocks, 1, [&](int64_t first, int64_t last) {  // one block per thread
    for (int64_t i = first; i < last; ++i) {
      try {
        parts[static_cast<size_t>(i)] = decode_rows(B * i / blocks, B * (i + 1) / blocks);
      } catch (...) {
        errors[static_cast<size_t>(i)] = std::current_exception();
      }
    }
  });
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  DecodeResult result = std::move(parts[0]);
  for (size_t i = 1; i < parts.size(); ++i) {
    DecodeResult& p = parts[i];
    std::move(p.tokens.begin(), p.tokens.end(), std::back_inserter(result.tokens));
    std::move(p.attention.begin(), p.attention.end(), std::back_inserter(result.attention));
    std::move(p.copy.begin(), p.copy.end(), std::back_inserter(result.copy));
  }
  return result;
}

DecodeResult greedy_decode(Decoder& decoder, const Seq2SeqConfig& config, const EncoderOutput& enc,
                           const Tensor& src_lengths, int max_len, const Tensor& src_ext, int64_t extended_vocab) {
  ops::FrozenWeights frozen_weights;  // packed fp32 weights for the steps
  const int64_t B = enc.outputs.dim(0), S = enc.outputs.dim(1);
  const int64_t W = decoder.attention ? decoder.attention->weight_heads() * S : 0;  // weights per row and step
  const nn::StepMemory memory = decoder.prepare(enc, src_lengths);
  DecoderState state = decoder.initial_state(enc, memory, B);
  const bool with_weights = decoder.attention != nullptr;
  DecodeResult result;
  result.tokens.resize(static_cast<size_t>(B));
  result.attention.resize(static_cast<size_t>(B));
  std::vector<char> finished(static_cast<size_t>(B), 0);
  Tensor prev = Tensor::empty({B}, DType::i32);  // y_{t-1}
  for (int64_t b = 0; b < B; ++b) prev.i32()[b] = kBos;
  const bool pointer = config.pointer;
  const int64_t V = pointer ? vocab_ext(config.vocab, extended_vocab) : config.vocab;  // Vx with the pointer
  if (pointer) result.copy.resize(static_cast<size_t>(B));
  int64_t remaining = B;
  for (int step = 0; step < max_len && remaining > 0; ++step) {
    const Tensor emb = decoder.embedding.forward(in_vocabulary(prev, config.vocab));  // (B, emb)
    const Decoder::Step s = decoder.step(emb, state, memory, with_weights);
    const Tensor logits =
        pointer ? decoder.step_pointer_log_probs(s, emb, src_ext, V) : decoder.step_logits(s, emb);  // (B, V)
    const float* l = logits.f32();
    for (int64_t b = 0; b < B; ++b) {
      const int32_t best = argmax(l + b * V, V);
      prev.i32()[b] = best;
      if (finished[static_cast<size_t>(b)]) continue;
      result.tokens[static_cast<size_t>(b)].push_back(best);
      if (pointer) result.copy[static_cast<size_t>(b)].push_back(1.0f - s.p_gen.f32()[b]);
      if (with_weights) {
        const float* w = s.weights.f32() + b * W;
        result.attention[static_cast<size_t>(b)].emplace_back(w, w + W);
      }
      if (best == kEos) {
        finished[static_cast<size_t>(b)] = 1;
        --remaining;
      }
    }
  }
  return result;
}

}  // namespace detail

}  // namespace attn::models
