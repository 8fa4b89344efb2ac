// The row normalisers: the softmax op over (rows, n) and the attention ops' masked softmax
// kernel over (B, T, S) score rows, forward and backward.
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/ops/softmax.h"
#include "kernels/normalizer.h"
#include "micro_support.h"

namespace attn::bench {
namespace {

// softmax(x) over rows of n, no recording: (2560, 40) is a decoder block's weights
// (B = 64, T = 40, S = 40), (1024, 1024) a self-attention weight matrix.
void BM_SoftmaxOp(benchmark::State& state) {
  const int64_t rows = state.range(0), n = state.range(1);
  Rng rng(1);
  const Tensor x = randn({rows, n}, rng, 3.0f);
  for (auto _ : state) {
    autodiff::NoGradGuard no_grad;
    Tensor y = softmax(x);
    benchmark::DoNotOptimize(y.f32());
  }
  state.SetItemsProcessed(state.iterations() * rows * n);
}
BENCHMARK(BM_SoftmaxOp)->Args({2560, 40})->Args({1024, 1024})->ArgNames({"rows", "n"})->UseRealTime();

kernels::NormalizerKind kind(int64_t k) { return static_cast<kernels::NormalizerKind>(k); }

// The attention ops' masked normaliser kernel, forward then backward, B = 64, T = 40,
// S = 40, row b of length S − b % 8 (padding as in a real batch); kind 0 softmax, 1 sigmoid,
// 2 sparsemax, 3 entmax15, 4 entmax_bisect (α = 1.3).
void BM_AttentionMaskedNormalizer(benchmark::State& state) {
  const int64_t B = state.range(0), T = state.range(1), S = state.range(2);
  Rng rng(1);
  const Tensor scores = randn({B, T, S}, rng, 3.0f), dweights = randn({B, T, S}, rng);
  std::vector<int32_t> lengths(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) lengths[static_cast<size_t>(b)] = static_cast<int32_t>(S - b % 8);
  Tensor weights = Tensor::empty({B, T, S}), dscores = Tensor::zeros({B, T, S});
  const kernels::Normalizer norm{.kind = kind(state.range(3)), .scale = 0.5f, .alpha = 1.3f};
  const kernels::NormalizerRows rows{.rows = B * T, .n = S, .group = T, .extents = lengths.data()};
  for (auto _ : state) {
    kernels::normalizer_forward(norm, rows, scores.f32(), weights.f32());
    kernels::normalizer_backward(norm, rows, scores.f32(), weights.f32(), dweights.f32(), dscores.f32());
    benchmark::DoNotOptimize(dscores.f32());
  }
  state.SetItemsProcessed(state.iterations() * B * T * S);
}
BENCHMARK(BM_AttentionMaskedNormalizer)
    ->ArgsProduct({{64}, {40}, {40}, {0, 1, 2, 3, 4}})
    ->ArgNames({"B", "T", "S", "kind"})
    ->UseRealTime();

}  // namespace
}  // namespace attn::bench
