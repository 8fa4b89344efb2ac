#pragma once
// CPU kernels of hard (sampled) attention and its REINFORCE loss: raw pointers and sizes,
// no checks, no allocation. Backward kernels accumulate (+=) into gradient buffers; a null
// gradient pointer means "not wanted".
//
// Layout: N = B·T rows r = b·T + t of weights (N, S); values (B, S, E); positions (N).
#include <cstdint>

namespace attn::kernels {

// positions[r] = the first s with w_s > 0 and Σ_{j<=s} w_j > u_r · Σ_j w_j (inverse CDF, so
// P(s) = w_s / Σ w), or, when uniforms is null, the first argmax of the row. A row without a
// positive weight gets −1.
void hard_attention_choose(const float* weights, const float* uniforms, int64_t N, int64_t S, int32_t* positions);

// context[r] = values[b, k_r];  log_prob[r] = log w[r, k_r]   (k_r = positions[r]);
// both 0 when k_r = −1.
void hard_attention_gather_forward(const int32_t* positions, const float* weights, const float* values, int64_t B,
                                   int64_t T, int64_t S, int64_t E, float* context, float* log_prob);
// dvalues[b, k_r] += dcontext[r];  dweights[r, k_r] += dlog_prob[r] / w[r, k_r]
// (d log w_k / d w_k = 1 / w_k; nothing for k_r = −1). Any pointer but positions, weights
// may be null.
void hard_attention_gather_backward(const int32_t* positions, const float* weights, const float* dcontext,
                                    const float* dlog_prob, int64_t B, int64_t T, int64_t S, int64_t E, float* dvalues,
                                    float* dweights);

// Σ_r H_r in double, H_r = −Σ_s w_{r,s} log w_{r,s} (0 log 0 = 0), summed in row order.
double reinforce_entropy_sum(const float* weights, int64_t rows, int64_t S);
// dweights[r, s] += coef · (−(log w_{r,s} + 1)) for w_{r,s} > 0 (dH/dw; zero weights get
// nothing: they are masked positions).
void reinforce_entropy_backward(const float* weights, int64_t rows, int64_t S, float coef, float* dweights);

}  // namespace attn::kernels
