#include "kernels/hard_attention.h"

#include <algorithm>
#include <cmath>

#include "attn/parallel.h"

namespace attn::kernels {

void hard_attention_choose(const float* weights, const float* uniforms, int64_t N, int64_t S, int32_t* positions) {
  for (int64_t r = 0; r < N; ++r) {
    const float* w = weights + r * S;
    int32_t chosen = -1;
    if (!uniforms) {
      float best = 0.0f;
      for (int64_t s = 0; s < S; ++s)
        if (w[s] > best) {
          best = w[s];
          chosen = static_cast<int32_t>(s);
        }
    } else {
      double total = 0.0;
      for (int64_t s = 0; s < S; ++s) total += w[s];
      const double target = static_cast<double>(uniforms[r]) * total;
      double cum = 0.0;
      for (int64_t s = 0; s < S; ++s) {
        if (!(w[s] > 0.0f)) continue;
        cum += w[s];
        chosen = static_cast<int32_t>(s);  // the last positive position so far (rounding fallback)
        if (cum > target) break;
      }
    }
    positions[r] = chosen;
  }
}

void hard_attention_gather_forward(const int32_t* positions, const float* weights, const float* values, int64_t B,
                                   int64_t T, int64_t S, int64_t E, float* context, float* log_prob) {
  for (int64_t r = 0; r < B * T; ++r) {
    const int64_t b = r / T, k = positions[r];
    float* c = context + r * E;
    if (k < 0) {
      std::fill(c, c + E, 0.0f);
      log_prob[r] = 0.0f;
      continue;
    }
    std::copy(values + (b * S + k) * E, values + (b * S + k + 1) * E, c);
    log_prob[r] = std::log(weights[r * S + k]);
  }
}

void hard_attention_gather_backward(const int32_t* positions, const float* weights, const float* dcontext,
                                    const float* dlog_prob, int64_t B, int64_t T, int64_t S, int64_t E, float* dvalues,
                                    float* dweights) {
  // Batch rows own their values' gradient; steps t in order.
  parallel_for(0, B, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, T * E)), [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b)
      for (int64_t t = 0; t < T; ++t) {
        const int64_t r = b * T + t, k = positions[r];
        if (k < 0) continue;
        if (dvalues && dcontext) {
          float* dv = dvalues + (b * S + k) * E;
          const float* dc = dcontext + r * E;
          for (int64_t e = 0; e < E; ++e) dv[e] += dc[e];
        }
        // log w_k:  dw_k += dlog / w_k
        if (dweights && dlog_prob) dweights[r * S + k] += dlog_prob[r] / weights[r * S + k];
      }
  });
}

double reinforce_entropy_sum(const float* weights, int64_t rows, int64_t S) {
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* w = weights + r * S;
    double h = 0.0;
    for (int64_t s = 0; s < S; ++s)
      if (w[s] > 0.0f) h -= static_cast<double>(w[s]) * std::log(static_cast<double>(w[s]));
    total += h;
  }
  return total;
}

void reinforce_entropy_backward(const float* weights, int64_t rows, int64_t S, float coef, float* dweights) {
  // H = −Σ w log w:  dH/dw = −(log w + 1)
  for (int64_t i = 0; i < rows * S; ++i)
    if (weights[i] > 0.0f) dweights[i] += -coef * (std::log(weights[i]) + 1.0f);
}

}  // namespace attn::kernels
