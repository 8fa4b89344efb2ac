// Seq2Seq::loss_backward_in_row_blocks: one training step as one block of rows per thread.
//
// Why: in a 2-thread step the kernels' own parallel regions left the second thread idle for
// about a third of the step (the small per-step products and the serial work between regions;
// bench/results/2026-12-04-rnntrain-*-amd-genoa.md). Rows of a batch are independent in the
// forward pass, and the mean cross-entropy over the N target tokens is Σ_b (N_b / N) · CE_b,
// so each thread can run its rows' forward and backward on its own tape, with every kernel
// single-threaded inside the one parallel region, and the gradients are summed afterwards.
#include <cstring>
#include <exception>
#include <optional>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/models/seq2seq.h"
#include "attn/ops/elementwise.h"
#include "attn/parallel.h"
#include "rnn_decoding.h"

namespace attn::models {

bool training_splits_rows(const Seq2SeqConfig& config) {
  const bool dropout_draws = config.dropout > 0.0f && config.layers > 1;  // dropout runs between stacked layers
  const nn::StepScore score = config.step_score();
  const bool samples = config.attention != AttentionKind::none && score == nn::StepScore::hard;
  const bool noise = config.attention != AttentionKind::none &&
                     (score == nn::StepScore::monotonic || score == nn::StepScore::mocha) &&
                     config.monotonic_noise != 0.0f;
  return !dropout_draws && !samples && !noise;
}

namespace {

// Rows [lo, hi) of every per-row tensor of `batch` (views, no copies).
Batch batch_rows(const Batch& batch, int64_t lo, int64_t hi) {
  const auto rows = [&](const Tensor& t) { return t.defined() ? t.slice(lo, hi) : Tensor(); };
  return {rows(batch.src),         rows(batch.src_lengths), rows(batch.tgt_in),      rows(batch.tgt_out),
          rows(batch.tgt_lengths), rows(batch.src_ext),     rows(batch.tgt_out_ext), batch.extended_vocab};
}

// The non-PAD tokens of rows [lo, hi) of targets (B, T): what the cross-entropy is the mean over.
int64_t target_tokens(const Tensor& targets, int64_t lo, int64_t hi) {
  const int64_t T = targets.dim(1);
  int64_t n = 0;
  for (int64_t i = lo * T; i < hi * T; ++i) n += targets.i32()[i] != kPad;
  return n;
}

// into += from, then from = 0 (its buffer kept for the next step), split over the threads.
void add_and_clear(Tensor into, Tensor from) {
  float* dst = into.f32();
  float* src = from.f32();
  parallel_for(0, into.numel(), 1 << 14, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) dst[i] += src[i];
    std::memset(src + lo, 0, sizeof(float) * static_cast<size_t>(hi - lo));
  });
}

}  // namespace

std::optional<Seq2Seq::StepValues> Seq2Seq::loss_backward_in_row_blocks(const Batch& batch, float label_smoothing,
                                                                        bool with_logits) {
  const int64_t B = batch.src.rank() == 2 ? batch.src.dim(0) : 0;
  const int64_t blocks = detail::row_block_count(B);
  if (blocks <= 1 || !autodiff::grad_enabled() || autodiff::tape().watching() || !training_splits_rows(config_))
    return std::nullopt;
  // A batch whose per-row tensors disagree goes through whole, to loss_terms's own errors.
  const auto has_rows = [&](const Tensor& t) { return !t.defined() || (t.rank() >= 1 && t.dim(0) == B); };
  if (!has_rows(batch.src_lengths) || !has_rows(batch.tgt_in) || !has_rows(batch.tgt_out) ||
      !has_rows(batch.tgt_lengths) || !has_rows(batch.src_ext) || !has_rows(batch.tgt_out_ext) ||
      batch.tgt_out.rank() != 2 || batch.tgt_out.dtype() != DType::i32 || batch.src_lengths.dtype() != DType::i32)
    return std::nullopt;
  check_lengths_in_range("Encoder", "src_lengths", batch.src_lengths, batch.src.dim(1));  // the whole batch's row index

  const auto first_row = [&](int64_t b) { return B * b / blocks; };
  std::vector<int64_t> tokens(static_cast<size_t>(blocks));  // N_b
  int64_t N = 0;
  for (int64_t b = 0; b < blocks; ++b)
    N += tokens[static_cast<size_t>(b)] = target_tokens(batch.tgt_out, first_row(b), first_row(b + 1));
  for (int64_t n : tokens)
    if (n == 0) return std::nullopt;  // a block of padding only: its mean is 0/0

  while (static_cast<int64_t>(replicas_.size()) < blocks) replicas_.push_back(std::make_unique<Seq2Seq>(config_));
  for (int64_t b = 0; b < blocks; ++b) {
    Seq2Seq& replica = *replicas_[static_cast<size_t>(b)];
    replica.share_parameters(*this);  // cheap (pointers); follows a reload of this model's storage
    replica.train(is_training());
  }

  std::vector<Loss> parts(static_cast<size_t>(blocks));
  std::vector<std::exception_ptr> errors(static_cast<size_t>(blocks));
  parallel_for(0, blocks, 1, [&](int64_t first, int64_t last) {  // one block per thread
    for (int64_t b = first; b < last; ++b) {
      try {
        const auto i = static_cast<size_t>(b);
        parts[i] = replicas_[i]->loss_terms(batch_rows(batch, first_row(b), first_row(b + 1)), label_smoothing);
        backward(scale(parts[i].loss, static_cast<float>(tokens[i]) / static_cast<float>(N)));
      } catch (...) {
        errors[static_cast<size_t>(b)] = std::current_exception();
        autodiff::tape().clear();  // a failed forward leaves its nodes on this thread's tape
      }
    }
  });
  for (const std::exception_ptr& e : errors)
    if (e) {
      for (const auto& replica : replicas_) replica->zero_grad(false);  // the next step starts clean
      std::rethrow_exception(e);
    }

  // Σ_b of the replicas' gradients, in block order, into this model's (which accumulate).
  const std::vector<Tensor> own = parameters();
  for (int64_t b = 0; b < blocks; ++b) {
    const std::vector<Tensor> theirs = replicas_[static_cast<size_t>(b)]->parameters();
    for (size_t p = 0; p < own.size(); ++p)
      if (theirs[p].has_grad()) add_and_clear(own[p].grad_accumulator(), theirs[p].grad());
  }

  StepValues values;
  values.blocks = blocks;
  for (int64_t b = 0; b < blocks; ++b) {
    const auto i = static_cast<size_t>(b);
    const double w = static_cast<double>(tokens[i]) / static_cast<double>(N);
    values.loss += w * parts[i].loss.item();
    values.cross_entropy += w * parts[i].cross_entropy.item();
  }
  if (!with_logits) return values;
  const int64_t T = parts[0].logits.dim(0), V = parts[0].logits.dim(2);  // block b's: (T, B_b, V)
  values.logits = Tensor::empty({T, B, V});
  for (int64_t b = 0; b < blocks; ++b) {
    const auto i = static_cast<size_t>(b);
    const int64_t lo = first_row(b), rows = first_row(b + 1) - lo;
    for (int64_t t = 0; t < T; ++t)
      std::memcpy(values.logits.f32() + (t * B + lo) * V, parts[i].logits.f32() + t * rows * V,
                  sizeof(float) * static_cast<size_t>(rows * V));
  }
  return values;
}

}  // namespace attn::models
