// The fused ops of the seq2seq decoder step and of self-attention, forward alone (no
// recording) and forward + backward (seeded with a fixed output gradient; gradient buffers
// are released after each iteration, as a training step's zero_grad does).
// FLOP counters count the matrix products only (2 per multiply-add; backward = 2x forward).
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/ops/attention.h"
#include "attn/ops/rnn_cell.h"
#include "attn/ops/sdpa.h"
#include "micro_support.h"

namespace attn::bench {
namespace {

void drop_grads(std::vector<Tensor>& ts) {
  for (Tensor& t : ts) t.drop_grad();
}

// GRU cell, B = 64, I = 320 ([emb 64; context 256]), H = 256: the bahdanau decoder step.
void gru_cell_bench(benchmark::State& state, bool with_backward) {
  const int64_t B = state.range(0), I = state.range(1), H = state.range(2);
  Rng rng(1);
  std::vector<Tensor> leaves = {randn({B, I}, rng, 1.0f, true),      randn({B, H}, rng, 1.0f, true),
                                randn({3 * H, I}, rng, 0.06f, true), randn({3 * H, H}, rng, 0.06f, true),
                                randn({3 * H}, rng, 0.06f, true),    randn({3 * H}, rng, 0.06f, true)};
  const Tensor seed = randn({B, H}, rng);
  for (auto _ : state) {
    if (with_backward) {
      Tensor h = gru_cell(leaves[0], leaves[1], leaves[2], leaves[3], leaves[4], leaves[5]);
      backward(h, seed);
      drop_grads(leaves);
    } else {
      autodiff::NoGradGuard no_grad;
      Tensor h = gru_cell(leaves[0], leaves[1], leaves[2], leaves[3], leaves[4], leaves[5]);
      benchmark::DoNotOptimize(h.f32());
    }
  }
  set_flops(state, (with_backward ? 3.0 : 1.0) * 2.0 * B * 3 * H * (I + H));
}
void BM_GruCellForward(benchmark::State& state) { gru_cell_bench(state, false); }
void BM_GruCellForwardBackward(benchmark::State& state) { gru_cell_bench(state, true); }
BENCHMARK(BM_GruCellForward)->Args({64, 320, 256})->ArgNames({"B", "I", "H"})->UseRealTime();
BENCHMARK(BM_GruCellForwardBackward)->Args({64, 320, 256})->ArgNames({"B", "I", "H"})->UseRealTime();

// Additive attention, one decoder step: query (B, D), projected keys (B, S, A), values
// (B, S, E); B = 64, S = 40, A = D = E = 256 (keys projected once outside the loop).
void additive_bench(benchmark::State& state, bool with_backward) {
  const int64_t B = state.range(0), S = state.range(1), A = state.range(2), D = A, E = A;
  Rng rng(1);
  std::vector<Tensor> leaves = {randn({B, D}, rng, 1.0f, true),    randn({B, S, A}, rng, 1.0f, true),
                                randn({B, S, E}, rng, 1.0f, true), randn({A, D}, rng, 0.05f, true),
                                randn({A}, rng, 0.05f, true),      randn({A}, rng, 0.05f, true)};
  const Tensor lengths =
      Tensor::from_vector(std::vector<int32_t>(static_cast<size_t>(B), static_cast<int32_t>(S)), {B});
  const Tensor seed = randn({B, E}, rng);
  AdditiveOptions o;
  o.need_weights = false;
  for (auto _ : state) {
    if (with_backward) {
      AttentionResult r =
          additive_attention(leaves[0], leaves[1], leaves[2], leaves[3], leaves[4], leaves[5], lengths, o);
      backward(r.context, seed);
      drop_grads(leaves);
    } else {
      autodiff::NoGradGuard no_grad;
      AttentionResult r =
          additive_attention(leaves[0], leaves[1], leaves[2], leaves[3], leaves[4], leaves[5], lengths, o);
      benchmark::DoNotOptimize(r.context.f32());
    }
  }
  // W_q q, vᵀ tanh(.) over (S, A), context over (S, E).
  set_flops(state, (with_backward ? 3.0 : 1.0) * (2.0 * B * D * A + 2.0 * B * S * A + 2.0 * B * S * E));
}
void BM_AdditiveForward(benchmark::State& state) { additive_bench(state, false); }
void BM_AdditiveForwardBackward(benchmark::State& state) { additive_bench(state, true); }
BENCHMARK(BM_AdditiveForward)->Args({64, 40, 256})->ArgNames({"B", "S", "A"})->UseRealTime();
BENCHMARK(BM_AdditiveForwardBackward)->Args({64, 40, 256})->ArgNames({"B", "S", "A"})->UseRealTime();

// Scaled dot-product attention, q, k, v (B, H, T, Dh), T = S; causal: the lower triangle
// only (its FLOPs counted as half the full square's).
void sdpa_bench(benchmark::State& state, bool with_backward) {
  const int64_t B = 1, H = state.range(0), T = state.range(1), Dh = state.range(2);
  const bool causal = state.range(3) != 0;
  SdpaOptions o;
  o.causal = causal;
  Rng rng(1);
  std::vector<Tensor> leaves = {randn({B, H, T, Dh}, rng, 1.0f, true), randn({B, H, T, Dh}, rng, 1.0f, true),
                                randn({B, H, T, Dh}, rng, 1.0f, true)};
  const Tensor seed = randn({B, H, T, Dh}, rng);
  for (auto _ : state) {
    if (with_backward) {
      SdpaResult r = sdpa(leaves[0], leaves[1], leaves[2], o);
      backward(r.out, seed);
      drop_grads(leaves);
    } else {
      autodiff::NoGradGuard no_grad;
      SdpaResult r = sdpa(leaves[0], leaves[1], leaves[2], o);
      benchmark::DoNotOptimize(r.out.f32());
    }
  }
  set_flops(state, (with_backward ? 3.0 : 1.0) * 4.0 * B * H * T * T * Dh * (causal ? 0.5 : 1.0));
}
void BM_SdpaForward(benchmark::State& state) { sdpa_bench(state, false); }
void BM_SdpaForwardBackward(benchmark::State& state) { sdpa_bench(state, true); }
BENCHMARK(BM_SdpaForward)
    ->Args({8, 1024, 32, 0})
    ->Args({8, 1024, 64, 0})
    ->Args({8, 2048, 64, 1})  // compare.sh's causal rows (--heads 8 --dim 512)
    ->ArgNames({"H", "T", "Dh", "causal"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_SdpaForwardBackward)
    ->Args({8, 1024, 32, 0})
    ->Args({8, 1024, 64, 0})
    ->Args({8, 2048, 64, 1})  // compare.sh's causal rows (--heads 8 --dim 512)
    ->ArgNames({"H", "T", "Dh", "causal"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Decoding: T queries per (hypothesis, head) against S cached keys, the Transformer
// benchmark's beam-5 shapes (64 sentences × 5 hypotheses, 4 heads of 64). T = 1 takes the
// kernel's one-query path; T = 2 the tiled path, which computes 16 query lanes either way, so
// its time per call is what T = 1 cost before that path (docs/performance.md).
void BM_SdpaDecode(benchmark::State& state) {
  const int64_t B = 320, H = 4, T = state.range(0), S = state.range(1), Dh = 64;
  Rng rng(1);
  const Tensor q = randn({B, H, T, Dh}, rng), k = randn({B, H, S, Dh}, rng), v = randn({B, H, S, Dh}, rng);
  autodiff::NoGradGuard no_grad;
  for (auto _ : state) {
    SdpaResult r = sdpa(q, k, v);
    benchmark::DoNotOptimize(r.out.f32());
  }
  set_flops(state, 4.0 * B * H * T * S * Dh);
}
BENCHMARK(BM_SdpaDecode)
    ->Args({1, 16})
    ->Args({2, 16})
    ->Args({1, 30})
    ->Args({2, 30})
    ->ArgNames({"T", "S"})
    ->UseRealTime();

}  // namespace
}  // namespace attn::bench
