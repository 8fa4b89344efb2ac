#include "attn/kernels/sdpa.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "attn/kernels/blas.h"
#include "attn/parallel.h"

// 32-byte vectors pass between the inlined helpers below; they never cross an ABI
// boundary, so the note about their calling convention does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace attn::kernels {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr int64_t kBq = kSdpaQueryTile;
constexpr int64_t kBk = kSdpaKeyTile;
constexpr int64_t kBkb = kSdpaBackwardKeyTile;

// ---------------------------------------------------------------------------------------
// Row primitives on 8-float vectors (GCC/Clang vector extensions), compiled for AVX2, AVX
// and the baseline, picked at load time (target_clones; the choice depends on the CPU
// only, never on the thread count). Row tails go through the same vector code, padded with
// -inf (exp gives 0), so an element's exp does not depend on where a tile boundary falls.
using v8f = float __attribute__((vector_size(32)));
using v8i = int32_t __attribute__((vector_size(32)));
constexpr int64_t kLanes = 8;
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define ATTN_SDPA_CLONES __attribute__((target_clones("avx2", "avx", "default")))
#else
#define ATTN_SDPA_CLONES
#endif

inline v8f splat(float x) { return v8f{x, x, x, x, x, x, x, x}; }
inline v8f load8(const float* p) {
  v8f v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
inline void store8(float* p, const v8f& v) { __builtin_memcpy(p, &v, sizeof v); }
// The n < 8 trailing elements of a row, padded with `pad`.
inline v8f load_tail(const float* p, int64_t n, float pad) {
  float buf[kLanes];
  for (int64_t j = 0; j < kLanes; ++j) buf[j] = j < n ? p[j] : pad;
  return load8(buf);
}
inline void store_tail(float* p, int64_t n, const v8f& v) {
  float buf[kLanes];
  store8(buf, v);
  for (int64_t j = 0; j < n; ++j) p[j] = buf[j];
}

// exp for the softmax: 2^n · e^r with n = round(x log2 e) (the 1.5·2^23 rounding trick),
// |r| <= ln2 / 2, and the Cephes degree-6 polynomial for e^r (about 1 ulp). Exactly 0 for
// x < -87.3 (e^-87.3 is near the smallest normal float), including -inf: that is how
// masked scores and fully masked rows (lse = +inf) become 0.
__attribute__((always_inline)) inline v8f exp8(const v8f& x) {
  const v8f lo = splat(-87.3f);
  v8f xc = x < lo ? lo : x;
  xc = xc > splat(88.3f) ? splat(88.3f) : xc;
  const v8f magic = splat(12582912.0f);
  const v8f t = xc * splat(1.44269504088896341f) + magic;
  const v8f n = t - magic;
  v8f r = xc - n * splat(0.693359375f);
  r = r - n * splat(-2.12194440e-4f);
  v8f y = splat(1.9875691500e-4f);
  y = y * r + splat(1.3981999507e-3f);
  y = y * r + splat(8.3334519073e-3f);
  y = y * r + splat(4.1665795894e-2f);
  y = y * r + splat(1.6666665459e-1f);
  y = y * r + splat(5.0000001201e-1f);
  y = y * r * r + r + splat(1.0f);
  const v8i bits = (((v8i)t - (v8i)magic) + 127) << 23;  // 2^n, n in [-126, 127]
  const v8f result = y * (v8f)bits;
  return x < lo ? splat(0.0f) : result;
}

inline float hmax(const v8f& v) {
  float m = v[0];
  for (int j = 1; j < kLanes; ++j) m = std::max(m, v[j]);
  return m;
}
inline float hsum(const v8f& v) { return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7])); }

// max_j r[j]
ATTN_SDPA_CLONES float row_max(const float* r, int64_t n) {
  v8f acc = splat(-std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    const v8f x = load8(r + j);
    acc = x > acc ? x : acc;
  }
  if (j < n) {
    const v8f x = load_tail(r + j, n - j, -std::numeric_limits<float>::infinity());
    acc = x > acc ? x : acc;
  }
  return hmax(acc);
}

// r[j] = exp(r[j] - m); returns Σ_j r[j].
ATTN_SDPA_CLONES float row_exp_sum(float* r, int64_t n, float m) {
  const v8f mm = splat(m);
  v8f acc = splat(0.0f);
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    const v8f e = exp8(load8(r + j) - mm);
    store8(r + j, e);
    acc += e;
  }
  if (j < n) {
    const v8f e = exp8(load_tail(r + j, n - j, -std::numeric_limits<float>::infinity()) - mm);
    store_tail(r + j, n - j, e);
    acc += e;
  }
  return hsum(acc);
}

// r[j] = exp(r[j] - m)
ATTN_SDPA_CLONES void row_exp(float* r, int64_t n, float m) {
  const v8f mm = splat(m);
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) store8(r + j, exp8(load8(r + j) - mm));
  if (j < n) store_tail(r + j, n - j, exp8(load_tail(r + j, n - j, -std::numeric_limits<float>::infinity()) - mm));
}

// ds[j] = p[j] (ds[j] - d)
ATTN_SDPA_CLONES void row_softmax_grad(float* ds, const float* p, int64_t n, float d) {
  const v8f dd = splat(d);
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) store8(ds + j, load8(p + j) * (load8(ds + j) - dd));
  for (; j < n; ++j) ds[j] = p[j] * (ds[j] - d);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Keys [0, key_end) can be visible to some row of the query tile ending (exclusive) at
// t_end; tiles at or beyond it are skipped entirely.
int64_t key_end(const SdpaProblem& p, int64_t b, int64_t t_end) {
  int64_t e = p.S;
  if (p.key_lengths) e = std::min<int64_t>(e, p.key_lengths[b]);
  if (p.causal) e = std::min(e, t_end + p.S - p.T);
  return std::max<int64_t>(e, 0);
}

// False when key_padding_mask removes every key of [s0, s0 + n): the tile is skipped.
bool tile_has_keys(const SdpaProblem& p, int64_t b, int64_t s0, int64_t n) {
  if (!p.key_padding_mask) return true;
  const int32_t* m = p.key_padding_mask + b * p.S + s0;
  for (int64_t j = 0; j < n; ++j)
    if (m[j] != 0) return true;
  return false;
}

// sc (rows, n; row stride ld) holds scale · q kᵀ for queries t0.. and keys s0..: adds the
// bias and sets masked scores to -inf. (Keys beyond key_lengths never reach a tile.)
void finish_scores(const SdpaProblem& p, int64_t b, int64_t t0, int64_t rows, int64_t s0, int64_t n, float* sc,
                   int64_t ld) {
  if (p.bias) {
    for (int64_t i = 0; i < rows; ++i) {
      float* r = sc + i * ld;
      const float* br = p.bias + (t0 + i) * p.S + s0;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) r[j] += br[j];
    }
  }
  if (p.key_padding_mask) {
    const int32_t* m = p.key_padding_mask + b * p.S + s0;
    for (int64_t i = 0; i < rows; ++i) {
      float* r = sc + i * ld;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) r[j] = m[j] != 0 ? r[j] : -kInf;
    }
  }
  if (p.causal) {
    const int64_t shift = p.S - p.T;
    for (int64_t i = 0; i < rows; ++i) {
      // Query t0 + i sees keys s <= t0 + i + shift: columns from `first` on are masked.
      const int64_t first = std::max<int64_t>(0, t0 + i + shift + 1 - s0);
      float* r = sc + i * ld;
      for (int64_t j = first; j < n; ++j) r[j] = -kInf;
    }
  }
}

// Splits `items` over `workers` round-robin (item w, w + workers, ...) so that uneven
// items (causal) balance; worker w uses scratch + w · scratch_floats. Each item is done by
// exactly one worker, so results do not depend on the split.
template <class Fn>
void run_items(int64_t items, int64_t workers, float* scratch, int64_t scratch_floats, Fn&& fn) {
  workers = std::min(workers, items);
  if (workers <= 0) return;
  parallel_for(0, workers, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t w = lo; w < hi; ++w)
      for (int64_t item = w; item < items; item += workers) fn(item, scratch + w * scratch_floats);
  });
}

int64_t workers_for(int64_t items) {
#ifdef ATTN_WITH_OPENMP
  if (omp_in_parallel()) return 1;  // parallel_for would run inline anyway
#endif
  return std::max<int64_t>(1, std::min<int64_t>(num_threads(), items));
}

// ---------------------------------------------------------------------------------------
// Forward: one (b, h, query tile) item. Online softmax over key tiles:
//   m' = max(m, rowmax(s)),  P = exp(s - m'),  l' = l e^(m - m') + rowsum(P),
//   acc' = acc e^(m - m') + P V;  finally out = acc / l, lse = m + log l.
// The accumulator is the output tile itself (rows, Dv).
void forward_item(const SdpaProblem& p, int64_t item, const float* q, const float* k, const float* v, float* out,
                  float* lse, float* weights, float* scratch) {
  const int64_t nq = ceil_div(p.T, kBq);
  const int64_t bh = item / nq;
  const int64_t t0 = (item % nq) * kBq;
  const int64_t b = bh / p.H;
  const int64_t rows = std::min(kBq, p.T - t0);
  const float* qt = q + (bh * p.T + t0) * p.Dh;  // (rows, Dh)
  const float* kh = k + bh * p.S * p.Dh;         // (S, Dh)
  const float* vh = v + bh * p.S * p.Dv;         // (S, Dv)
  float* o = out + (bh * p.T + t0) * p.Dv;       // (rows, Dv)
  float* row_lse = lse + bh * p.T + t0;          // (rows)
  float* m = scratch;                            // (Bq) running max
  float* l = scratch + kBq;                      // (Bq) running sum
  float* sc = scratch + 2 * kBq;                 // (Bq, Bk) scores, then probabilities

  for (int64_t i = 0; i < rows; ++i) {
    m[i] = -kInf;
    l[i] = 0.0f;
  }
  std::fill(o, o + rows * p.Dv, 0.0f);
  const int64_t kend = key_end(p, b, t0 + rows);

  for (int64_t s0 = 0; s0 < kend; s0 += kBk) {
    const int64_t n = std::min(kBk, kend - s0);
    if (!tile_has_keys(p, b, s0, n)) continue;
    gemm(false, true, rows, n, p.Dh, p.scale, qt, p.Dh, kh + s0 * p.Dh, p.Dh, 0.0f, sc, kBk);
    finish_scores(p, b, t0, rows, s0, n, sc, kBk);
    for (int64_t i = 0; i < rows; ++i) {
      float* r = sc + i * kBk;
      const float mx = row_max(r, n);
      const float m_new = std::max(m[i], mx);
      if (m_new == -kInf) {  // nothing visible yet in this row
        std::fill(r, r + n, 0.0f);
        continue;
      }
      const float sum = row_exp_sum(r, n, m_new);
      if (m_new != m[i]) {
        const float alpha = std::exp(m[i] - m_new);  // 0 when m was -inf
        l[i] *= alpha;
        float* orow = o + i * p.Dv;
#pragma omp simd
        for (int64_t d = 0; d < p.Dv; ++d) orow[d] *= alpha;
        m[i] = m_new;
      }
      l[i] += sum;
    }
    gemm(false, false, rows, p.Dv, n, 1.0f, sc, kBk, vh + s0 * p.Dv, p.Dv, 1.0f, o, p.Dv);
  }

  for (int64_t i = 0; i < rows; ++i) {
    float* orow = o + i * p.Dv;
    if (l[i] > 0.0f) {
      const float inv = 1.0f / l[i];
#pragma omp simd
      for (int64_t d = 0; d < p.Dv; ++d) orow[d] *= inv;
      row_lse[i] = m[i] + std::log(l[i]);
    } else {  // fully masked row: zero output, and exp(s - lse) = 0 everywhere
      std::fill(orow, orow + p.Dv, 0.0f);
      row_lse[i] = kInf;
    }
  }

  if (!weights) return;
  // Second pass with the final statistics: weights = exp(s - lse), written in place.
  float* w = weights + (bh * p.T + t0) * p.S;  // (rows, S)
  for (int64_t s0 = 0; s0 < kend; s0 += kBk) {
    const int64_t n = std::min(kBk, kend - s0);
    if (!tile_has_keys(p, b, s0, n)) {
      for (int64_t i = 0; i < rows; ++i) std::fill(w + i * p.S + s0, w + i * p.S + s0 + n, 0.0f);
      continue;
    }
    gemm(false, true, rows, n, p.Dh, p.scale, qt, p.Dh, kh + s0 * p.Dh, p.Dh, 0.0f, w + s0, p.S);
    finish_scores(p, b, t0, rows, s0, n, w + s0, p.S);
    for (int64_t i = 0; i < rows; ++i) {
      row_exp(w + i * p.S + s0, n, row_lse[i]);
    }
  }
  for (int64_t i = 0; i < rows; ++i) std::fill(w + i * p.S + kend, w + (i + 1) * p.S, 0.0f);
}

// ---------------------------------------------------------------------------------------
// Backward: one (query tile, key tile) pair of head bh, recomputing P from the saved
// statistics. Accumulates into the non-null gradient pointers:
//   dv_j += P_ijᵀ dO_i,  dS_ij = P_ij ⊙ (dO_i V_jᵀ + dW_ij - D_i),
//   dq_i += scale · dS_ij K_j,  dk_j += scale · dS_ijᵀ Q_i.
struct BackwardInputs {
  const float* q;
  const float* k;
  const float* v;
  const float* lse;
  const float* dout;
  const float* dweights;
  const float* delta;
};

void backward_tile(const SdpaProblem& p, const BackwardInputs& in, int64_t bh, int64_t qi, int64_t kj, float* dq,
                   float* dk, float* dv, float* scratch) {
  const int64_t b = bh / p.H;
  const int64_t t0 = qi * kBq;
  const int64_t rows = std::min(kBq, p.T - t0);
  const int64_t s0 = kj * kBkb;
  const int64_t kend = key_end(p, b, t0 + rows);
  if (s0 >= kend) return;
  const int64_t n = std::min(kBkb, kend - s0);
  if (!tile_has_keys(p, b, s0, n)) return;

  float* P = scratch;              // (Bq, Bkb)
  float* dS = scratch + kBq * kBkb;  // (Bq, Bkb)
  const float* qt = in.q + (bh * p.T + t0) * p.Dh;  // (rows, Dh)
  const float* kt = in.k + (bh * p.S + s0) * p.Dh;  // (n, Dh)
  const float* vt = in.v + (bh * p.S + s0) * p.Dv;  // (n, Dv)
  const float* row_lse = in.lse + bh * p.T + t0;
  const float* row_delta = in.delta + bh * p.T + t0;
  const float* dot = in.dout ? in.dout + (bh * p.T + t0) * p.Dv : nullptr;  // (rows, Dv)

  gemm(false, true, rows, n, p.Dh, p.scale, qt, p.Dh, kt, p.Dh, 0.0f, P, kBkb);
  finish_scores(p, b, t0, rows, s0, n, P, kBkb);
  for (int64_t i = 0; i < rows; ++i) {
    row_exp(P + i * kBkb, n, row_lse[i]);
  }
  if (dv && dot) gemm(true, false, n, p.Dv, rows, 1.0f, P, kBkb, dot, p.Dv, 1.0f, dv + (bh * p.S + s0) * p.Dv, p.Dv);
  if (!dq && !dk) return;

  if (dot) {
    gemm(false, true, rows, n, p.Dv, 1.0f, dot, p.Dv, vt, p.Dv, 0.0f, dS, kBkb);
  } else {
    for (int64_t i = 0; i < rows; ++i) std::fill(dS + i * kBkb, dS + i * kBkb + n, 0.0f);
  }
  for (int64_t i = 0; i < rows; ++i) {
    float* ds = dS + i * kBkb;
    const float* pr = P + i * kBkb;
    if (in.dweights) {
      const float* dw = in.dweights + (bh * p.T + t0 + i) * p.S + s0;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) ds[j] += dw[j];
    }
    row_softmax_grad(ds, pr, n, row_delta[i]);
  }
  if (dq) gemm(false, false, rows, p.Dh, n, p.scale, dS, kBkb, kt, p.Dh, 1.0f, dq + (bh * p.T + t0) * p.Dh, p.Dh);
  if (dk) gemm(true, false, n, p.Dh, rows, p.scale, dS, kBkb, qt, p.Dh, 1.0f, dk + (bh * p.S + s0) * p.Dh, p.Dh);
}

}  // namespace

int64_t sdpa_forward_workers(const SdpaProblem& p) { return workers_for(p.B * p.H * ceil_div(p.T, kBq)); }
int64_t sdpa_forward_scratch_floats(const SdpaProblem&) { return 2 * kBq + kBq * kBk; }
int64_t sdpa_backward_workers(const SdpaProblem& p) {
  return workers_for(p.B * p.H * std::max(ceil_div(p.T, kBq), ceil_div(p.S, kBkb)));
}
int64_t sdpa_backward_scratch_floats(const SdpaProblem&) { return 2 * kBq * kBkb; }

void sdpa_forward(const SdpaProblem& p, const float* q, const float* k, const float* v, float* out, float* lse,
                  float* weights, float* scratch, int64_t workers) {
  const int64_t items = p.B * p.H * ceil_div(p.T, kBq);
  run_items(items, workers, scratch, sdpa_forward_scratch_floats(p), [&](int64_t item, float* s) {
    forward_item(p, item, q, k, v, out, lse, weights, s);
  });
}

void sdpa_backward(const SdpaProblem& p, const float* q, const float* k, const float* v, const float* out,
                   const float* lse, const float* dout, const float* weights, const float* dweights, float* dq,
                   float* dk, float* dv, float* delta, float* scratch, int64_t workers) {
  const int64_t heads = p.B * p.H;
  const int64_t rows = heads * p.T;
  // D_t = rowsum(dO ⊙ O) + rowsum(dW ⊙ W): the softmax Jacobian's shared term.
  parallel_for(0, rows, 256, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      float d = 0.0f;
      if (dout) {
        const float* a = dout + r * p.Dv;
        const float* o = out + r * p.Dv;
#pragma omp simd reduction(+ : d)
        for (int64_t j = 0; j < p.Dv; ++j) d += a[j] * o[j];
      }
      if (dweights) {
        float e = 0.0f;
        const float* a = dweights + r * p.S;
        const float* w = weights + r * p.S;
#pragma omp simd reduction(+ : e)
        for (int64_t j = 0; j < p.S; ++j) e += a[j] * w[j];
        d += e;
      }
      delta[r] = d;
    }
  });
  if (!dq && !dk && !dv) return;

  const BackwardInputs in{q, k, v, lse, dout, dweights, delta};
  const int64_t nq = ceil_div(p.T, kBq);
  const int64_t nk = ceil_div(p.S, kBkb);
  const int64_t per = sdpa_backward_scratch_floats(p);
  // Each dq_i sums its key tiles in increasing j and each dk_j / dv_j its query tiles in
  // increasing i under both schedules, so they give identical bits.
  const bool per_head = heads >= workers && (heads % workers == 0 || heads >= 3 * workers);
  if (per_head) {
    run_items(heads, workers, scratch, per, [&](int64_t bh, float* s) {
      for (int64_t kj = 0; kj < nk; ++kj)
        for (int64_t qi = 0; qi < nq; ++qi) backward_tile(p, in, bh, qi, kj, dq, dk, dv, s);
    });
    return;
  }
  if (dk || dv) {
    run_items(heads * nk, workers, scratch, per, [&](int64_t item, float* s) {
      const int64_t bh = item / nk;
      const int64_t kj = item % nk;
      for (int64_t qi = 0; qi < nq; ++qi) backward_tile(p, in, bh, qi, kj, nullptr, dk, dv, s);
    });
  }
  if (dq) {
    run_items(heads * nq, workers, scratch, per, [&](int64_t item, float* s) {
      const int64_t bh = item / nq;
      const int64_t qi = item % nq;
      for (int64_t kj = 0; kj < nk; ++kj) backward_tile(p, in, bh, qi, kj, dq, nullptr, nullptr, s);
    });
  }
}

}  // namespace attn::kernels
