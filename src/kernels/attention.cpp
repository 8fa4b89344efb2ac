#include "kernels/attention.h"

#include <algorithm>
#include <cmath>

#include "attn/parallel.h"
#include "fast_math.h"
#include "kernels/blas.h"

namespace attn::kernels::inline ATTN_ISA_NS {
namespace {

// Rows whose total work is below this many multiply-adds are not worth a thread.
constexpr int64_t kMinWork = 1 << 15;

int64_t grain_for(int64_t work_per_item) {
  return std::max<int64_t>(1, kMinWork / std::max<int64_t>(1, work_per_item));
}

// Runs fn(b) for each batch row. Small per-row products: thread-chunks of batch rows (BLAS
// runs single-threaded inside our parallel region). Large products: one at a time, and
// BLAS threads each. Each b writes only its own rows, so results do not depend on the split.
template <class Fn>
void for_each_batch(int64_t B, int64_t work_per_item, Fn&& fn) {
  if (B > 1 && work_per_item < 64 * 64 * 64) {
    parallel_for(0, B, grain_for(work_per_item), [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b) fn(b);
    });
  } else {
    for (int64_t b = 0; b < B; ++b) fn(b);
  }
}

// e[s] = Σ_a v_a tanh(u_a + keys[s, a]) for s < len: one query row against its source.
void additive_row_scores(const float* u, const float* keys, const float* v, int64_t len, int64_t A, float* e) {
  for (int64_t s = 0; s < len; ++s) e[s] = additive_score(u, keys + s * A, v, A);
}

// The additive backward for batch rows [lo, hi), with the wanted gradients fixed at
// compile time so the inner loop carries no branches.
template <bool kDu, bool kDk, bool kDv>
void additive_backward_batches(const float* u, const float* keys, const float* v, const float* dscores,
                               const int32_t* lengths, int64_t lo, int64_t hi, int64_t T, int64_t S, int64_t A,
                               float* du, float* dkeys, float* dv_partial) {
  for (int64_t b = lo; b < hi; ++b) {
    const int64_t len = lengths[b];
    float* dvp = kDv ? dv_partial + b * A : nullptr;
    for (int64_t t = 0; t < T; ++t) {
      const int64_t r = b * T + t;
      const float* ur = u + r * A;
      const float* ds = dscores + r * S;
      float* dur = kDu ? du + r * A : nullptr;
      for (int64_t s = 0; s < len; ++s) {
        const float de = ds[s];
        if (de == 0.0f) continue;  // contributes exactly nothing
        const float* ks = keys + (b * S + s) * A;
        float* dks = kDk ? dkeys + (b * S + s) * A : nullptr;
        ATTN_SIMD
        for (int64_t a = 0; a < A; ++a) {
          const float h = tanh_approx(ur[a] + ks[a]);
          if constexpr (kDv) dvp[a] += de * h;
          const float g = de * v[a] * (1.0f - h * h);
          if constexpr (kDu) dur[a] += g;
          if constexpr (kDk) dks[a] += g;
        }
      }
    }
  }
}

}  // namespace

// ---- context = weights · values --------------------------------------------------------------
//
// Per batch row these are (T, L) × (L, E) products. A decoder step has T = 1, where one BLAS
// call costs more than its 20k multiply-adds (about 9 µs each, 2 GFLOP/s), so up to
// kDirectRows query rows go through plain vector loops instead.

constexpr int64_t kDirectRows = 8;

namespace {

// The three products of one batch row, over its first `len` of S positions; `accumulate` adds
// to the output instead of writing it.

// out (T, E) (+)= w (T, S)[:, :len] · x (len, E)
void row_product_nn(const float* w, const float* x, int64_t T, int64_t S, int64_t E, int64_t len, bool accumulate,
                    float* out) {
  if (T <= kDirectRows) {
    for (int64_t t = 0; t < T; ++t) {  // out_t (+)= Σ_s w_ts x_s
      float* o = out + t * E;
      if (!accumulate) std::fill(o, o + E, 0.0f);
      for (int64_t s = 0; s < len; ++s) axpy(w[t * S + s], x + s * E, o, E);
    }
    return;
  }
  // len = 0 without accumulate writes zeros (gemm with k = 0 sets C = beta C).
  gemm(false, false, T, E, len, 1.0f, w, S, x, E, accumulate ? 1.0f : 0.0f, out, E);
}

// out (T, S)[:, :len] (+)= a (T, E) · x (len, E)ᵀ
void row_product_nt(const float* a, const float* x, int64_t T, int64_t S, int64_t E, int64_t len, bool accumulate,
                    float* out) {
  if (T <= kDirectRows) {
    for (int64_t t = 0; t < T; ++t)  // out_ts (+)= a_t · x_s
      for (int64_t s = 0; s < len; ++s) {
        const float d = dot(a + t * E, x + s * E, E);
        out[t * S + s] = accumulate ? out[t * S + s] + d : d;
      }
    return;
  }
  gemm(false, true, T, len, E, 1.0f, a, E, x, E, accumulate ? 1.0f : 0.0f, out, S);
}

// out (len, E) += w (T, S)[:, :len]ᵀ · a (T, E)
void row_product_tn_add(const float* w, const float* a, int64_t T, int64_t S, int64_t E, int64_t len, float* out) {
  if (T <= kDirectRows) {
    for (int64_t t = 0; t < T; ++t)  // out_s += w_ts a_t
      for (int64_t s = 0; s < len; ++s) axpy(w[t * S + s], a + t * E, out + s * E, E);
    return;
  }
  gemm(true, false, len, E, T, 1.0f, w, S, a, E, 1.0f, out, E);
}

}  // namespace

// c_t = Σ_s w_ts v_s
void attention_context_forward(const float* weights, const float* values, const int32_t* lengths, int64_t B, int64_t T,
                               int64_t S, int64_t E, float* context) {
  for_each_batch(B, T * S * E, [=](int64_t b) {
    row_product_nn(weights + b * T * S, values + b * S * E, T, S, E, lengths[b], false, context + b * T * E);
  });
}

// dW = dC Vᵀ, dV = Wᵀ dC (per batch row, over the first L_b positions)
void attention_context_backward(const float* weights, const float* values, const float* dcontext,
                                const int32_t* lengths, int64_t B, int64_t T, int64_t S, int64_t E, float* dweights,
                                float* dvalues) {
  for_each_batch(B, 2 * T * S * E, [=](int64_t b) {
    const float* dc = dcontext + b * T * E;
    if (dweights) row_product_nt(dc, values + b * S * E, T, S, E, lengths[b], true, dweights + b * T * S);
    if (dvalues) row_product_tn_add(weights + b * T * S, dc, T, S, E, lengths[b], dvalues + b * S * E);
  });
}

// ---- dot scores (Luong dot / general) -----------------------------------------------------------

// e_ts = q_t · k_s
void attention_dot_scores_forward(const float* q, const float* keys, const int32_t* lengths, int64_t B, int64_t T,
                                  int64_t S, int64_t E, float* scores) {
  for_each_batch(B, T * S * E, [=](int64_t b) {
    row_product_nt(q + b * T * E, keys + b * S * E, T, S, E, lengths[b], false, scores + b * T * S);
  });
}

// dq = dE K, dK = dEᵀ q
void attention_dot_scores_backward(const float* q, const float* keys, const float* dscores, const int32_t* lengths,
                                   int64_t B, int64_t T, int64_t S, int64_t E, float* dq, float* dkeys) {
  for_each_batch(B, 2 * T * S * E, [=](int64_t b) {
    const float* de = dscores + b * T * S;
    if (dq) row_product_nn(de, keys + b * S * E, T, S, E, lengths[b], true, dq + b * T * E);
    if (dkeys) row_product_tn_add(de, q + b * T * E, T, S, E, lengths[b], dkeys + b * S * E);
  });
}

// ---- additive scores (Bahdanau, Luong concat) ----------------------------------------------------

void attention_additive_scores_forward(const float* u, const float* keys, const float* v, const int32_t* lengths,
                                       int64_t B, int64_t T, int64_t S, int64_t A, float* scores) {
  parallel_for(0, B * T, grain_for(S * A * 8), [=](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t b = r / T;
      const int64_t len = lengths[b];
      additive_row_scores(u + r * A, keys + b * S * A, v, len, A, scores + r * S);
    }
  });
}

// h = tanh(u_t + k_s), e = v·h:  dv += de h,  du_t += de v (1 - h²),  dk_s += de v (1 - h²)
void attention_additive_scores_backward(const float* u, const float* keys, const float* v, const float* dscores,
                                        const int32_t* lengths, int64_t B, int64_t T, int64_t S, int64_t A, float* du,
                                        float* dkeys, float* dv_partial) {
  using Fn = void (*)(const float*, const float*, const float*, const float*, const int32_t*, int64_t, int64_t, int64_t,
                      int64_t, int64_t, float*, float*, float*);
  static constexpr Fn kVariants[8] = {
      additive_backward_batches<false, false, false>, additive_backward_batches<false, false, true>,
      additive_backward_batches<false, true, false>,  additive_backward_batches<false, true, true>,
      additive_backward_batches<true, false, false>,  additive_backward_batches<true, false, true>,
      additive_backward_batches<true, true, false>,   additive_backward_batches<true, true, true>};
  const int variant = (du ? 4 : 0) | (dkeys ? 2 : 0) | (dv_partial ? 1 : 0);
  if (variant == 0) return;
  const Fn fn = kVariants[variant];
  // Batch rows are independent (dkeys[b] and dv_partial[b] belong to b alone).
  parallel_for(0, B, grain_for(T * S * A * 12), [=](int64_t lo, int64_t hi) {
    fn(u, keys, v, dscores, lengths, lo, hi, T, S, A, du, dkeys, dv_partial);
  });
}

// ---- helpers -----------------------------------------------------------------------------------

void attention_add_bias_rows(float* y, const float* bias, int64_t rows, int64_t n) {
  parallel_for(0, rows, grain_for(n), [=](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      float* yr = y + r * n;
      ATTN_SIMD
      for (int64_t c = 0; c < n; ++c) yr[c] += bias[c];
    }
  });
}

double attention_softmax_scale_grad(const float* weights, const float* dweights, const float* scores,
                                    const int32_t* lengths, int64_t B, int64_t T, int64_t S) {
  double total = 0.0;
  for (int64_t r = 0; r < B * T; ++r) {
    const int64_t len = lengths[r / T];
    const float* a = weights + r * S;
    const float* da = dweights + r * S;
    const float* e = scores + r * S;
    double mass = 0.0, mean_da = 0.0, mean_e = 0.0;
    for (int64_t s = 0; s < len; ++s) {
      mass += a[s];
      mean_da += static_cast<double>(a[s]) * da[s];
      mean_e += static_cast<double>(a[s]) * e[s];
    }
    if (mass == 0.0) continue;
    mean_da /= mass;
    mean_e /= mass;
    double row = 0.0;
    for (int64_t s = 0; s < len; ++s) row += a[s] * (da[s] - mean_da) * (e[s] - mean_e);
    total += row;
  }
  return total;
}

void attention_scale_inplace(float* x, float alpha, int64_t n) {
  ATTN_SIMD
  for (int64_t i = 0; i < n; ++i) x[i] *= alpha;
}

}  // namespace attn::kernels::inline ATTN_ISA_NS
