#pragma once
// The finite-difference check of gradient × input shared by the explain tests: scaling token
// s's embedding row e[0, s, :] by (1 + t) and differentiating at t = 0 gives
// Σ_d ∂f/∂e_{s,d} · e_{s,d}, which is what gradient × input reports for token s.
#include <cstdint>

#include "attn/tensor.h"

namespace attn::testing {

// e: (1, S, D) embeddings; f: a Tensor of that shape → a double. Central difference, step h.
template <class F>
double scaled_row_derivative(const Tensor& e, int64_t s, F&& f, double h = 1e-2) {
  const int64_t D = e.dim(2);
  auto scaled = [&](double t) {
    Tensor x = e.clone();
    for (int64_t d = 0; d < D; ++d) x.f32()[s * D + d] *= static_cast<float>(1 + t);
    return static_cast<double>(f(x));
  };
  return (scaled(h) - scaled(-h)) / (2 * h);
}

}  // namespace attn::testing
