#include "kernels/local_attention.h"

#include <algorithm>
#include <cmath>

#include "attn/parallel.h"
#include "fast_math.h"
#include "kernels/dropout.h"
#include "kernels/normalizer.h"

namespace attn::kernels::inline ATTN_ISA_NS {
namespace {

// Items whose total work is below this many multiply-adds are not worth a thread.
constexpr int64_t kMinWork = 1 << 15;

int64_t grain_for(int64_t work_per_item) {
  return std::max<int64_t>(1, kMinWork / std::max<int64_t>(1, work_per_item));
}

// The dropout factor of dense position i: 1 / (1 − p) kept, 0 dropped; 1 when p == 0.
inline float drop_factor(float p, uint64_t seed, int64_t i) {
  if (p == 0.0f) return 1.0f;
  return dropout_keep(seed, static_cast<uint64_t>(i), p) ? 1.0f / (1.0f - p) : 0.0f;
}

}  // namespace

void local_attention_windows(const int32_t* centres, const int32_t* lengths, int64_t B, int64_t T, int64_t D_w,
                             int32_t* starts, int32_t* counts) {
  for (int64_t b = 0; b < B; ++b) {
    const int64_t L = lengths[b];
    for (int64_t t = 0; t < T; ++t) {
      const int64_t r = b * T + t, c = centres[r];
      const int64_t lo = std::max<int64_t>(0, c - D_w);
      const int64_t hi = std::min<int64_t>(L - 1, c + D_w);
      starts[r] = static_cast<int32_t>(hi >= lo ? lo : 0);
      counts[r] = static_cast<int32_t>(hi >= lo ? hi - lo + 1 : 0);
    }
  }
}

void local_attention_forward(const LocalAttentionProblem& pr, float* soft, float* weights, float* context) {
  const int64_t B = pr.B, T = pr.T, S = pr.S, E = pr.E, K = pr.K;
  const float *q = pr.q, *keys = pr.keys, *values = pr.values, *p = pr.p;
  const int32_t *starts = pr.starts, *counts = pr.counts, *keep = pr.keep;
  const float alpha = pr.alpha, gauss = pr.gauss, drop_p = pr.drop_p;
  const uint64_t drop_seed = pr.drop_seed;
  const int64_t N = B * T;
  parallel_for(0, N, grain_for(2 * K * E), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t b = r / T, st = starts[r], n = counts[r];
      float* a = soft + r * K;
      float* w = weights + r * K;
      float* c = context + r * E;
      std::fill(a, a + K, 0.0f);
      std::fill(w, w + K, 0.0f);
      std::fill(c, c + E, 0.0f);
      if (n == 0) continue;
      const float* qr = q + r * E;
      const float* kb = keys + (b * S + st) * E;
      const float* vb = values + (b * S + st) * E;
      // e_j = q · k_j on the kept slots (masked ones stay 0 and are left out), then
      // a = softmax(alpha e) over the window: all zeros when every slot is masked.
      const int32_t* kp = keep ? keep + b * S + st : nullptr;
      for (int64_t j = 0; j < n; ++j)
        if (!kp || kp[j]) a[j] = dot(qr, kb + j * E, E);
      normalizer_row_forward(Normalizer{.scale = alpha}, a, kp, a, n);
      // w = a ⊙ g (Gaussian around p_r for local-p, not renormalised).
      if (p) {
        const float pos = p[r];
        for (int64_t j = 0; j < n; ++j) {
          const float d = static_cast<float>(st + j) - pos;
          w[j] = a[j] * fast_exp(-d * d * gauss);
        }
      } else {
        for (int64_t j = 0; j < n; ++j) w[j] = a[j];
      }
      for (int64_t j = 0; j < n; ++j) axpy(w[j] * drop_factor(drop_p, drop_seed, r * S + st + j), vb + j * E, c, E);
    }
  });
}

void local_attention_backward(const LocalAttentionProblem& pr, const float* soft, const float* weights,
                              const float* dcontext, const float* dweights, float* scratch,
                              const LocalAttentionGrads& grads) {
  const int64_t B = pr.B, T = pr.T, S = pr.S, E = pr.E, K = pr.K;
  const float *q = pr.q, *keys = pr.keys, *values = pr.values, *p = pr.p;
  const int32_t *starts = pr.starts, *counts = pr.counts;
  const float alpha = pr.alpha, gauss = pr.gauss, drop_p = pr.drop_p;
  const uint64_t drop_seed = pr.drop_seed;
  float *dq = grads.dq, *dkeys = grads.dkeys, *dvalues = grads.dvalues, *dp = grads.dp;
  const bool want_scores = dq || dkeys;
  parallel_for(0, B, grain_for(4 * T * K * E), [&](int64_t blo, int64_t bhi) {
    for (int64_t b = blo; b < bhi; ++b)
      for (int64_t t = 0; t < T; ++t) {
        const int64_t r = b * T + t, st = starts[r], n = counts[r];
        if (n == 0) continue;
        const float* a = soft + r * K;
        const float* w = weights + r * K;
        const float* dc = dcontext ? dcontext + r * E : nullptr;
        const int64_t base = (b * S + st) * E;
        float* dw = scratch + r * K;
        // dw_j = m_j (dc · v_j + dweights[r, s_j])   (m_j: the dropout factor)
        for (int64_t j = 0; j < n; ++j) {
          float g = dc ? dot(dc, values + base + j * E, E) : 0.0f;
          if (dweights) g += dweights[r * S + st + j];
          dw[j] = g * drop_factor(drop_p, drop_seed, r * S + st + j);
        }
        // dv_j += m_j w_j dc
        if (dvalues && dc)
          for (int64_t j = 0; j < n; ++j)
            axpy(w[j] * drop_factor(drop_p, drop_seed, r * S + st + j), dc, dvalues + base + j * E, E);
        // dp += Σ_j dw_j w_j (s_j − p) / σ²
        if (p && dp) {
          float acc = 0.0f;
          for (int64_t j = 0; j < n; ++j) acc += dw[j] * w[j] * (static_cast<float>(st + j) - p[r]);
          dp[r] += acc * 2.0f * gauss;
        }
        if (!want_scores) continue;
        // da_j = dw_j g_j (in place);  de_j = alpha a_j (da_j − Σ a da)
        if (p)
          for (int64_t j = 0; j < n; ++j) {
            const float d = static_cast<float>(st + j) - p[r];
            dw[j] *= fast_exp(-d * d * gauss);
          }
        float ada = 0.0f;
        for (int64_t j = 0; j < n; ++j) ada += a[j] * dw[j];
        for (int64_t j = 0; j < n; ++j) dw[j] = alpha * a[j] * (dw[j] - ada);
        const float* qr = q + r * E;
        if (dq) {
          float* dqr = dq + r * E;
          for (int64_t j = 0; j < n; ++j) axpy(dw[j], keys + base + j * E, dqr, E);
        }
        if (dkeys)
          for (int64_t j = 0; j < n; ++j) axpy(dw[j], qr, dkeys + base + j * E, E);
      }
  });
}

void local_attention_scatter_weights(const float* weights, const int32_t* starts, const int32_t* counts, float drop_p,
                                     uint64_t drop_seed, int64_t N, int64_t S, int64_t K, float* dense) {
  for (int64_t r = 0; r < N; ++r)
    for (int64_t j = 0; j < counts[r]; ++j) {
      const int64_t i = r * S + starts[r] + j;
      dense[i] = weights[r * K + j] * drop_factor(drop_p, drop_seed, i);
    }
}

void local_attention_position_forward(float* pre, const float* v_p, const int32_t* lengths, int64_t B, int64_t T,
                                      int64_t A, float* sg, float* p, int32_t* centres) {
  parallel_for(0, B * T, grain_for(8 * A), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      float* h = pre + r * A;
      for (int64_t a = 0; a < A; ++a) h[a] = std::tanh(h[a]);
      const float u = dot(v_p, h, A);
      const float s = sigmoid_approx(u);
      const int64_t L = lengths[r / T];
      sg[r] = s;
      p[r] = static_cast<float>(L) * s;
      const int64_t c = static_cast<int64_t>(std::floor(p[r]));
      centres[r] = static_cast<int32_t>(L == 0 ? 0 : std::clamp<int64_t>(c, 0, L - 1));
    }
  });
}

void local_attention_position_backward(const float* h, const float* v_p, const float* sg, const float* dp,
                                       const int32_t* lengths, int64_t B, int64_t T, int64_t A, float* du,
                                       float* dpre) {
  parallel_for(0, B * T, grain_for(4 * A), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      // p = L σ(u):  du = dp · L σ (1 − σ)
      const float g = dp[r] * static_cast<float>(lengths[r / T]) * sg[r] * (1.0f - sg[r]);
      du[r] += g;
      // u = v_p · tanh(pre):  dpre = du · v_p ⊙ (1 − h²)
      const float* hr = h + r * A;
      float* d = dpre + r * A;
      ATTN_SIMD
      for (int64_t a = 0; a < A; ++a) d[a] += g * v_p[a] * (1.0f - hr[a] * hr[a]);
    }
  });
}

}  // namespace attn::kernels::inline ATTN_ISA_NS
