// kernels::gemm (the one doorway to BLAS) against cblas_sgemm called directly: the large
// square product gives the machine's GEMM peak; the seq2seq shapes show what the model's
// products reach (B = 64, H = 256, emb = 64, S = 40, T = 41, V = 32).
#include <cblas.h>

#include "kernels/blas.h"
#include "micro_support.h"

namespace attn::bench {
namespace {

void BM_Gemm(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  Rng rng(1);
  Tensor a = randn({m, k}, rng), b = randn({k, n}, rng), c = Tensor::zeros({m, n});
  for (auto _ : state) {
    kernels::gemm(false, false, m, n, k, 1.0f, a.f32(), k, b.f32(), n, 0.0f, c.f32(), n);
    benchmark::DoNotOptimize(c.f32());
    benchmark::ClobberMemory();
  }
  set_flops(state, 2.0 * m * n * k);
}

// x Wᵀ, the layout of every linear layer and RNN gate product (W stored (N, K)).
void BM_GemmNT(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  Rng rng(1);
  Tensor a = randn({m, k}, rng), w = randn({n, k}, rng), c = Tensor::zeros({m, n});
  for (auto _ : state) {
    kernels::gemm(false, true, m, n, k, 1.0f, a.f32(), k, w.f32(), k, 0.0f, c.f32(), n);
    benchmark::DoNotOptimize(c.f32());
    benchmark::ClobberMemory();
  }
  set_flops(state, 2.0 * m * n * k);
}

void BM_CblasSgemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  Rng rng(1);
  Tensor a = randn({n, n}, rng), b = randn({n, n}, rng), c = Tensor::zeros({n, n});
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(n), static_cast<blasint>(n),
                static_cast<blasint>(n), 1.0f, a.f32(), static_cast<blasint>(n), b.f32(), static_cast<blasint>(n), 0.0f,
                c.f32(), static_cast<blasint>(n));
    benchmark::DoNotOptimize(c.f32());
    benchmark::ClobberMemory();
  }
  set_flops(state, 2.0 * n * n * n);
}

// cblas_sgemm itself on the step shapes (OpenBLAS packs both operands on every call): the
// reference for a small-row kernel that packs nothing (one was tried at adcec3c and lost,
// bench/results/2026-12-02-amdahl-bounds-cpu-time.md).
void BM_CblasStep(benchmark::State& state) {
  const bool tb = state.range(0) != 0;
  const int64_t m = state.range(1), n = state.range(2), k = state.range(3);
  Rng rng(1);
  Tensor a = randn({m, k}, rng), w = tb ? randn({n, k}, rng) : randn({k, n}, rng), c = Tensor::zeros({m, n});
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
                static_cast<blasint>(n), static_cast<blasint>(k), 1.0f, a.f32(), static_cast<blasint>(k), w.f32(),
                static_cast<blasint>(tb ? k : n), 0.0f, c.f32(), static_cast<blasint>(n));
    benchmark::DoNotOptimize(c.f32());
    benchmark::ClobberMemory();
  }
  set_flops(state, 2.0 * m * n * k);
}

// Large square products: the peak.
BENCHMARK(BM_Gemm)
    ->Args({512, 512, 512})
    ->Args({1024, 1024, 1024})
    ->Args({2048, 2048, 2048})
    ->ArgNames({"m", "n", "k"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_CblasSgemm)->Arg(1024)->Arg(2048)->ArgName("n")->Unit(benchmark::kMillisecond)->UseRealTime();
// The seq2seq model's products (x Wᵀ):
//   64 x 768 x 256    GRU recurrence h W_hhᵀ per step (encoder and decoder)
//   64 x 768 x 320    decoder GRU input [emb; c] W_ihᵀ per step (bahdanau)
//   64 x 256 x 256    W_q s_{t-1} per step
//   2560 x 768 x 64   encoder input projection, hoisted over S·B rows
//   2560 x 256 x 256  K W_kᵀ once per batch
//   2624 x 32 x 576   output layer over T·B rows, [s; c; emb]
// Beam-5 decoding of the Multi30k Transformer (d 256, FFN 1024, 6,000 pieces): 5 rows (one
// sentence), 320 (64 sentences); 1 row is a greedy step of one sentence (OpenBLAS's gemv).
// ATTN_FP32_GEMM=openblas|auto compares the two fp32 paths (docs/performance.md).
BENCHMARK(BM_GemmNT)
    ->Args({1, 6000, 256})
    ->Args({5, 256, 256})
    ->Args({5, 1024, 256})
    ->Args({5, 6000, 256})
    ->Args({320, 6000, 256})
    ->Args({64, 768, 256})
    ->Args({64, 768, 320})
    ->Args({64, 256, 256})
    ->Args({2560, 768, 64})
    ->Args({2560, 256, 256})
    ->Args({2624, 32, 576})
    ->Args({320, 1024, 256})
    ->Args({320, 256, 256})
    ->ArgNames({"m", "n", "k"})
    ->UseRealTime();
// The step products' backward (dX = dY W, B = W not transposed):
//   64 x 256 x 768    dh = dG W_hh,  64 x 320 x 768  d[emb; c] = dG W_ih,  64 x 256 x 256  ds = du W_q
BENCHMARK(BM_Gemm)
    ->Args({64, 256, 768})
    ->Args({64, 320, 768})
    ->Args({64, 256, 256})
    ->Args({320, 256, 1024})
    ->ArgNames({"m", "n", "k"})
    ->UseRealTime();
BENCHMARK(BM_CblasStep)
    ->Args({1, 64, 768, 256})
    ->Args({1, 64, 768, 320})
    ->Args({1, 64, 256, 256})
    ->Args({0, 64, 256, 768})
    ->Args({0, 64, 320, 768})
    ->Args({0, 64, 256, 256})
    ->Args({1, 320, 1024, 256})
    ->Args({1, 320, 256, 256})
    ->ArgNames({"tb", "m", "n", "k"})
    ->UseRealTime();

}  // namespace
}  // namespace attn::bench
