// Xavier-initialised parameters of the RNN attention ops (attn/nn/attention_init.h).
#include "attn/nn/attention_init.h"

#include <cmath>
#include <string>

#include "attn/error.h"
#include "attn/nn/init.h"

namespace attn::nn {
namespace {

// A parameter of `shape`, Xavier-drawn as a (rows, cols) matrix in flat order.
Tensor xavier_parameter(const Shape& shape, int64_t rows, int64_t cols, Rng& rng) {
  Tensor t = Tensor::empty({rows, cols});
  xavier_uniform_(t, rng);
  Tensor p = t.reshape(shape);
  p.set_requires_grad(true);
  return p;
}

Tensor xavier_matrix(int64_t rows, int64_t cols, Rng& rng) { return xavier_parameter({rows, cols}, rows, cols, rng); }
// A vector (n) drawn as a (1, n) matrix.
Tensor xavier_vector(int64_t n, Rng& rng) { return xavier_parameter({n}, 1, n, rng); }

Tensor zeros_parameter(int64_t n) {
  Tensor t = Tensor::zeros({n});
  t.set_requires_grad(true);
  return t;
}

std::string sizes(int64_t D, int64_t E, int64_t A) {
  return "D=" + std::to_string(D) + ", E=" + std::to_string(E) + ", A=" + std::to_string(A);
}

}  // namespace

AdditiveParams additive_attention_init(int64_t D, int64_t E, int64_t A, Rng& rng, bool normalize) {
  if (D < 1 || E < 1 || A < 1) throw ValueError("additive_attention_init: sizes must be >= 1, got " + sizes(D, E, A));
  AdditiveParams p;
  p.w_q = xavier_matrix(A, D, rng);
  p.w_k = xavier_matrix(A, E, rng);
  p.bias = zeros_parameter(A);
  p.v = xavier_vector(A, rng);
  // Normed Bahdanau (TF): g starts at sqrt(1 / A).
  if (normalize) {
    p.g = Tensor::full({}, std::sqrt(1.0f / static_cast<float>(A)));
    p.g.set_requires_grad(true);
  }
  return p;
}

LocationAwareParams location_aware_attention_init(int64_t D, int64_t E, int64_t A, int64_t K, int64_t r, Rng& rng) {
  if (K < 1 || r < 1 || r % 2 == 0)
    throw ValueError("location_aware_attention_init: filters K must be >= 1 and the width r odd, got K=" +
                     std::to_string(K) + ", r=" + std::to_string(r));
  const AdditiveParams a = additive_attention_init(D, E, A, rng);
  LocationAwareParams p{a.w_q, a.w_k, a.bias, a.v, {}, {}};
  p.filters = xavier_matrix(K, r, rng);
  p.w_loc = xavier_matrix(A, K, rng);
  return p;
}

LuongParams luong_attention_init(LuongScore score, int64_t D, int64_t E, int64_t A, Rng& rng) {
  if (D < 1 || E < 1 || (score == LuongScore::concat && A < 1))
    throw ValueError("luong_attention_init: sizes must be >= 1, got " + sizes(D, E, A));
  LuongParams p;
  switch (score) {
    case LuongScore::dot:
      break;
    case LuongScore::general:
      p.w = xavier_matrix(D, E, rng);
      break;
    case LuongScore::concat:
      p.w = xavier_matrix(A, D + E, rng);
      p.v = xavier_vector(A, rng);
      break;
    default:
      throw ValueError("luong_attention_init: unknown score function " + std::to_string(static_cast<int>(score)));
  }
  return p;
}

LocationParams location_attention_init(int64_t D, int64_t S_max, Rng& rng) {
  if (D < 1 || S_max < 1)
    throw ValueError("location_attention_init: sizes must be >= 1, got D=" + std::to_string(D) +
                     ", S_max=" + std::to_string(S_max));
  return {xavier_matrix(S_max, D, rng), zeros_parameter(S_max)};
}

LocalParams local_attention_init(LocalMode mode, LuongScore score, int64_t D, int64_t E, int64_t A, Rng& rng) {
  const bool predictive = mode == LocalMode::predictive;
  if (D < 1 || E < 1 || (predictive && A < 1))
    throw ValueError("local_attention_init: sizes must be >= 1, got " + sizes(D, E, A));
  LocalParams p;
  if (score == LuongScore::general) p.w = xavier_matrix(D, E, rng);
  if (predictive) {
    p.w_p = xavier_matrix(A, D, rng);
    p.v_p = xavier_vector(A, rng);
  }
  return p;
}

}  // namespace attn::nn
