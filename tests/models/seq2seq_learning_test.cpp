// The learning test of the bottleneck issue: a small Bahdanau model learns the copy task at
// length 10 to >= 99 % token accuracy (greedy decoding, EOS included) within a bounded
// number of Adam steps.
#include <chrono>

#include "attn/data/tasks.h"
#include "attn/models/seq2seq.h"
#include "attn/parallel.h"
#include "attn/train/optimizer.h"
#include "test_support.h"

namespace attn::models {
namespace {

// Token accuracy per target position (target + EOS), as the CLI's metrics count it.
double token_accuracy(Seq2Seq& model, const data::Batch& batch) {
  const int64_t B = batch.src.dim(0), T = batch.tgt_out.dim(1);
  const DecodeResult r = model.greedy(batch.src, batch.src_lengths, static_cast<int>(T) + 2);
  int64_t right = 0, total = 0;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = batch.tgt_lengths.i32()[b];
    for (int64_t t = 0; t < n; ++t) {
      const int32_t want = batch.tgt_out.i32()[b * T + t];
      const auto& got = r.tokens[static_cast<size_t>(b)];
      right += static_cast<size_t>(t) < got.size() && got[static_cast<size_t>(t)] == want;
      ++total;
    }
  }
  return static_cast<double>(right) / static_cast<double>(total);
}

TEST(Seq2SeqLearning, BahdanauLearnsCopyAtLength10) {
  // One thread: this small model gains little from two, and on a loaded machine OpenMP
  // barriers (active spinning) can cost more than the work.
  set_num_threads(1);
  Seq2SeqConfig c;
  c.attention = AttentionKind::bahdanau;
  c.emb = 32;
  c.hidden = 64;
  c.seed = 1;
  Seq2Seq model(c);
  train::Adam adam(model.parameters(), {.lr = 5e-3f});
  data::TaskGenerator train_data(data::TaskKind::copy, 5, 10, 11);
  data::TaskGenerator eval_data(data::TaskKind::copy, 10, 10, 12);
  const data::Batch eval_batch = eval_data.fixed_length(200, 10);
  constexpr int kMaxSteps = 2000;
  const auto start = std::chrono::steady_clock::now();
  double accuracy = 0.0;
  int step = 0;
  while (step < kMaxSteps) {
    for (int i = 0; i < 100; ++i, ++step) {
      Tensor loss = model.loss(train_data.next(32));
      backward(loss);
      train::clip_grad_norm(model.parameters(), 1.0f);
      adam.step();
      adam.zero_grad();
    }
    model.eval();
    accuracy = token_accuracy(model, eval_batch);
    model.train();
    if (accuracy >= 0.99) break;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("copy@10: token accuracy %.4f after %d steps, %.1f s\n", accuracy, step, seconds);
  EXPECT_GE(accuracy, 0.99) << "after " << step << " steps";
}

}  // namespace
}  // namespace attn::models
