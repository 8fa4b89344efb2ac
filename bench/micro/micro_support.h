#pragma once
// Helpers shared by the microbenchmarks.
#include <benchmark/benchmark.h>

#include "attn/nn/init.h"
#include "attn/random.h"
#include "attn/tensor.h"

namespace attn::bench {

inline Tensor randn(const Shape& shape, Rng& rng, float scale = 1.0f, bool requires_grad = false) {
  Tensor t = Tensor::empty(shape);
  nn::normal_(t, 0.0f, scale, rng);
  if (requires_grad) t.set_requires_grad(true);
  return t;
}

// Reports `flops` per iteration as a GFLOP/s rate counter ("GFLOPS").
inline void set_flops(benchmark::State& state, double flops) {
  state.counters["GFLOPS"] =
      benchmark::Counter(flops * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

}  // namespace attn::bench
