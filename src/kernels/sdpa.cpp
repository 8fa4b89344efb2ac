#include "kernels/sdpa.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attn/parallel.h"

// 32-byte vectors pass between the inlined helpers below; they never cross an ABI
// boundary, so the note about their calling convention does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace attn::kernels::inline ATTN_ISA_NS {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr int64_t kBq = kSdpaQueryTile;
constexpr int64_t kBk = kSdpaKeyTile;
constexpr int64_t kBkb = kSdpaBackwardKeyTile;
// Rows per strip of a tile that the causal diagonal crosses: each strip computes only what
// its rows can see, so about 5/8 of a 128 × 128 diagonal block is computed instead of all
// of it (the visible part is just over half).
constexpr int64_t kCausalStrip = 32;

// ---------------------------------------------------------------------------------------
// Row primitives on 8-float vectors (GCC/Clang vector extensions), compiled per ISA level
// with the rest of this file (two SSE registers at baseline, one YMM register above; the
// choice depends on the level only, never on the thread count). Row tails go through the
// same vector code, padded with -inf (exp gives 0), so an element's exp does not depend on
// where a tile boundary falls.
using v8f = float __attribute__((vector_size(32)));
using v8u = uint32_t __attribute__((vector_size(32)));
constexpr int64_t kLanes = 8;

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

// 2^x for the softmax's arguments (x <= 0; correct up to x = 127): 2^n · 2^r with
// n = round(x), r = x - n (exact, |r| <= 1/2) and a degree-6 minimax polynomial for 2^r
// (relative error 2e-9 before float rounding, about 1 ulp after). Rounding adds
// 1.5·2^23 + 127, which leaves n + 127 in t's low mantissa bits, so 2^n is t's bits shifted
// into the exponent field. Exactly 0 for x < -126 (2^-126 is the smallest normal float),
// including -inf: that is how masked scores and fully masked rows (lse = +inf) become 0.
// (Below -126 the arithmetic leaves garbage or NaN, quietly and without traps; the final
// select discards it.) The forward works in base 2 (scores pre-multiplied by log2 e), so
// this is one add, two subtractions and 7 multiply-adds per 8 floats.
__attribute__((always_inline)) inline v8f exp2_8(const v8f& x) {
  const v8f magic = splat(12582912.0f + 127.0f);
  const v8f t = x + magic;
  const v8f r = x - (t - magic);
  v8f y = splat(1.5353311027865857e-4f);
  y = y * r + splat(1.3398855226114392e-3f);
  y = y * r + splat(9.6184369176626205e-3f);
  y = y * r + splat(5.5503323674201965e-2f);
  y = y * r + splat(2.4022647738456726e-1f);
  y = y * r + splat(6.9314718246459961e-1f);
  y = y * r + splat(1.0f);
  const v8u bits = (v8u)t << 23;  // 2^n, n in [-126, 127]
  const v8f result = y * (v8f)bits;
  return x < splat(-126.0f) ? splat(0.0f) : result;
}

constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2 = 0.693147180559945309f;

// r[j] = 2^(r[j] - m)
void row_exp2(float* r, int64_t n, float m) {
  const v8f mm = splat(m);
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) store8(r + j, exp2_8(load8(r + j) - mm));
  if (j < n) store_tail(r + j, n - j, exp2_8(load_tail(r + j, n - j, -kInf) - mm));
}

// ds[j] = scale · p[j] (ds[j] - d)
void row_softmax_grad(float* ds, const float* p, int64_t n, float d, float scale) {
  const v8f dd = splat(d), ss = splat(scale);
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) store8(ds + j, ss * load8(p + j) * (load8(ds + j) - dd));
  for (; j < n; ++j) ds[j] = scale * p[j] * (ds[j] - d);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Causal masking: query t sees keys s <= t + shift (S - T bottom-right aligned, 0 top-left).
int64_t causal_shift(const SdpaProblem& p) { return p.causal_upper_left ? 0 : p.S - p.T; }

// Keys [0, key_end) can be visible to some row of the query tile ending (exclusive) at
// t_end; tiles at or beyond it are skipped entirely.
int64_t key_end(const SdpaProblem& p, int64_t b, int64_t t_end) {
  int64_t e = p.S;
  if (p.key_lengths) e = std::min<int64_t>(e, p.key_lengths[b]);
  if (p.causal) e = std::min(e, t_end + causal_shift(p));
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

// sc (rows, n; row stride ld) holds scale · log2 e · q kᵀ (base 2) for queries t0.. and keys
// s0..: adds log2 e · bias and sets masked scores to -inf. (Keys beyond key_lengths never
// reach a tile.)
void finish_scores(const SdpaProblem& p, int64_t bh, int64_t t0, int64_t rows, int64_t s0, int64_t n, float* sc,
                   int64_t ld) {
  const int64_t b = bh / p.H;
  if (p.bias) {
    for (int64_t i = 0; i < rows; ++i) {
      float* r = sc + i * ld;
      const float* br = p.bias + bh * p.bias_head_stride + (t0 + i) * p.S + s0;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) r[j] += kLog2e * br[j];
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
    const int64_t shift = causal_shift(p);
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
// Tile products written by hand. In the forward, queries lie along the vector lanes: a
// query tile is kept transposed (Dh, Bq), so the score tile comes out as
// sᵀ (keys, Bq) = K_tile · Qᵀ, the online-softmax statistics of 8 queries sit in one vector,
// and the output accumulates as Oᵀ (Dv, Bq) += V_tileᵀ · Pᵀ. K and V are read where they lie (one broadcast per
// element), so nothing is packed; the tiles stay in L1/L2.
//
// c[r][0, 16) (+)= Σ_k a(r, k) · b[k][0, 16) for r < R, with a(r, k) = a[r·a_rs + k·a_ks]
// broadcast and b's rows ldb apart. 2R accumulators stay in registers for the whole k loop.
template <int R>
__attribute__((always_inline)) inline void broadcast_tile(const float* a, int64_t a_rs, int64_t a_ks, const float* b,
                                                          int64_t ldb, int64_t K, float* c, int64_t ldc,
                                                          bool accumulate) {
  v8f lo[R], hi[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    lo[r] = accumulate ? load8(c + r * ldc) : splat(0.0f);
    hi[r] = accumulate ? load8(c + r * ldc + kLanes) : splat(0.0f);
  }
  for (int64_t k = 0; k < K; ++k) {
    const v8f b0 = load8(b + k * ldb);
    const v8f b1 = load8(b + k * ldb + kLanes);
    const float* ak = a + k * a_ks;
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const v8f x = splat(ak[r * a_rs]);
      lo[r] += x * b0;
      hi[r] += x * b1;
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    store8(c + r * ldc, lo[r]);
    store8(c + r * ldc + kLanes, hi[r]);
  }
}

template <class... Args>
__attribute__((always_inline)) inline void broadcast_block(int64_t R, Args... args) {
  switch (R) {
    case 1:
      broadcast_tile<1>(args...);
      break;
    case 2:
      broadcast_tile<2>(args...);
      break;
    case 3:
      broadcast_tile<3>(args...);
      break;
    case 4:
      broadcast_tile<4>(args...);
      break;
    case 5:
      broadcast_tile<5>(args...);
      break;
    default:
      broadcast_tile<6>(args...);
      break;
  }
}

// C (rows, cols) (+)= A (rows, K) · B (K, cols) with A(r, k) = a[r·a_rs + k·a_ks]; B and C
// row-major (ldb, ldc). Blocks of 6 rows × 16 columns; the last cols % 16 columns go
// through a zero-padded copy of B's columns (in chunks of K) and of C's.
void broadcast_gemm(int64_t rows, int64_t cols, int64_t K, const float* a, int64_t a_rs, int64_t a_ks, const float* b,
                    int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  constexpr int64_t kR = 6, kW = 2 * kLanes, kPanelK = 128;
  for (int64_t r0 = 0; r0 < rows; r0 += kR) {
    const int64_t R = std::min(kR, rows - r0);
    const float* ar = a + r0 * a_rs;
    float* cr = c + r0 * ldc;
    int64_t c0 = 0;
    for (; c0 + kW <= cols; c0 += kW) broadcast_block(R, ar, a_rs, a_ks, b + c0, ldb, K, cr + c0, ldc, accumulate);
    if (c0 == cols) continue;
    const int64_t w = cols - c0;
    float block[kR * kW], panel[kPanelK * kW];
    for (int64_t r = 0; r < R; ++r)
      for (int64_t j = 0; j < kW; ++j) block[r * kW + j] = accumulate && j < w ? cr[r * ldc + c0 + j] : 0.0f;
    for (int64_t k0 = 0; k0 < K; k0 += kPanelK) {
      const int64_t kc = std::min(kPanelK, K - k0);
      for (int64_t k = 0; k < kc; ++k)
        for (int64_t j = 0; j < kW; ++j) panel[k * kW + j] = j < w ? b[(k0 + k) * ldb + c0 + j] : 0.0f;
      broadcast_block(R, ar + k0 * a_ks, a_rs, a_ks, static_cast<const float*>(panel), kW, kc, block, kW, true);
    }
    for (int64_t r = 0; r < R; ++r) std::copy(block + r * kW, block + r * kW + w, cr + r * ldc + c0);
  }
}

// One online-softmax step for the query lanes [0, cols) (a multiple of 16) over a score
// tile sᵀ (n, ld) in base 2 (scores times log2 e):
//   m' = max(m, max_j s),  P = 2^(s - m') in place,  l' = l 2^(m - m') + Σ_j P,
//   Oᵀ (Dv, ld) *= 2^(m - m').
// A lane with nothing visible yet (m' = -inf) subtracts 0 instead, so its P is 0. Two
// vectors of lanes go together: two independent chains keep the pipelines busy. With
// block_keys, lanes [c, c + 16) read only the first block_keys[c / 16] keys: the rest are
// masked for all 16 (causal), and are left as they are.
void online_softmax_tile(float* st, int64_t n, int64_t cols, int64_t ld, float* m, float* l, float* ot, int64_t Dv,
                         const int64_t* block_keys) {
  const v8f ninf = splat(-kInf);
  for (int64_t c = 0; c < cols; c += 2 * kLanes) {
    const int64_t nc = block_keys ? block_keys[c / (2 * kLanes)] : n;
    v8f mx0 = ninf, mx1 = ninf;
    for (int64_t j = 0; j < nc; ++j) {
      const v8f x0 = load8(st + j * ld + c), x1 = load8(st + j * ld + c + kLanes);
      mx0 = x0 > mx0 ? x0 : mx0;
      mx1 = x1 > mx1 ? x1 : mx1;
    }
    const v8f m0 = load8(m + c), m1 = load8(m + c + kLanes);
    const v8f n0 = mx0 > m0 ? mx0 : m0, n1 = mx1 > m1 ? mx1 : m1;
    const v8f sub0 = n0 == ninf ? splat(0.0f) : n0, sub1 = n1 == ninf ? splat(0.0f) : n1;
    const v8f alpha0 = exp2_8(m0 - sub0), alpha1 = exp2_8(m1 - sub1);  // 1 if the max stayed, 0 if m was -inf
    v8f sum0 = splat(0.0f), sum1 = splat(0.0f);
    for (int64_t j = 0; j < nc; ++j) {
      float* r = st + j * ld + c;
      const v8f e0 = exp2_8(load8(r) - sub0), e1 = exp2_8(load8(r + kLanes) - sub1);
      store8(r, e0);
      store8(r + kLanes, e1);
      sum0 += e0;
      sum1 += e1;
    }
    store8(l + c, load8(l + c) * alpha0 + sum0);
    store8(l + c + kLanes, load8(l + c + kLanes) * alpha1 + sum1);
    store8(m + c, n0);
    store8(m + c + kLanes, n1);
    for (int64_t d = 0; d < Dv; ++d) {
      float* r = ot + d * ld + c;
      store8(r, load8(r) * alpha0);
      store8(r + kLanes, load8(r + kLanes) * alpha1);
    }
  }
}

// st (n, ld) = 2^(st - lse₂) per query lane (base 2): the final attention weights of a tile.
void final_weights_tile(float* st, int64_t n, int64_t cols, int64_t ld, const float* lse) {
  for (int64_t c = 0; c < cols; c += kLanes) {
    const v8f z = load8(lse + c);
    for (int64_t j = 0; j < n; ++j) store8(st + j * ld + c, exp2_8(load8(st + j * ld + c) - z));
  }
}

// The forward's twin of finish_scores: sᵀ (n, ld) for queries t0.. (lanes [0, cols)) and
// keys s0.. (rows), in base 2: adds log2 e · bias and sets masked scores to -inf.
void finish_scores_t(const SdpaProblem& p, int64_t bh, int64_t t0, int64_t rows, int64_t cols, int64_t s0, int64_t n,
                     float* st, int64_t ld) {
  const int64_t b = bh / p.H;
  if (p.bias) {
    const float* bias = p.bias + bh * p.bias_head_stride;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < rows; ++i) st[j * ld + i] += kLog2e * bias[(t0 + i) * p.S + s0 + j];
  }
  if (p.key_padding_mask) {
    const int32_t* mask = p.key_padding_mask + b * p.S + s0;
    for (int64_t j = 0; j < n; ++j)
      if (mask[j] == 0) std::fill(st + j * ld, st + j * ld + cols, -kInf);
  }
  if (p.causal) {
    // Key s0 + j is visible to query t0 + i iff s0 + j <= t0 + i + shift: lanes below
    // `end` are masked.
    const int64_t shift = causal_shift(p);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t end = std::clamp<int64_t>(s0 + j - shift - t0, 0, cols);
      std::fill(st + j * ld, st + j * ld + end, -kInf);
    }
  }
}

// Forward for a tile of one query (decoding: T = 1), which the lane layout below would
// compute 16 times over (one used lane of 16). Keys go along the lanes instead: each key
// tile is transposed into (Dh, n), so the scores are one broadcast product of the query, and
// the output accumulates as a row, o += P_j v_j. Every element goes through the same
// operations in the same order as lane 0 of the tiled path (same key tiles, the same
// fused multiply-adds over d and over j, the same online-softmax updates), so the results
// are bit-identical to it (tests/attention/sdpa_test.cpp). Needs Dh <= kBq (scratch).
void forward_one_query(const SdpaProblem& p, int64_t bh, int64_t t0, const float* q, const float* k, const float* v,
                       float* out, float* lse, float* weights, float* scratch) {
  const int64_t b = bh / p.H;
  const float* kh = k + bh * p.S * p.Dh;  // (S, Dh)
  const float* vh = v + bh * p.S * p.Dv;  // (S, Dv)
  float* o = out + (bh * p.T + t0) * p.Dv;
  float* s_row = scratch;   // (Bk) scores, then probabilities
  float* qs = s_row + kBk;  // (Dh) scale · log2 e · q
  float* k_t = qs + p.Dh;   // (Dh, Bk) the key tile transposed
  const float scale2 = p.scale * kLog2e;
  const float* qt = q + (bh * p.T + t0) * p.Dh;
  for (int64_t d = 0; d < p.Dh; ++d) qs[d] = scale2 * qt[d];
  const int64_t kend = key_end(p, b, t0 + 1);
  // s_row[0, n) = scores of keys s0.. in base 2, finished (bias, masks).
  auto scores = [&](int64_t s0, int64_t n) {
    for (int64_t j = 0; j < n; ++j)
      for (int64_t d = 0; d < p.Dh; ++d) k_t[d * n + j] = kh[(s0 + j) * p.Dh + d];
    broadcast_gemm(1, n, p.Dh, qs, 0, 1, k_t, n, s_row, n, false);
    finish_scores(p, bh, t0, 1, s0, n, s_row, n);
  };

  float m = -kInf, l = 0.0f;
  std::fill(o, o + p.Dv, 0.0f);  // the output accumulator until the final division
  for (int64_t s0 = 0; s0 < kend; s0 += kBk) {
    const int64_t n = std::min(kBk, kend - s0);
    if (!tile_has_keys(p, b, s0, n)) continue;
    scores(s0, n);
    float mx = -kInf;
    for (int64_t j = 0; j < n; ++j) mx = s_row[j] > mx ? s_row[j] : mx;
    const float new_m = mx > m ? mx : m;
    const float sub = new_m == -kInf ? 0.0f : new_m;
    const float alpha = exp2_8(splat(m - sub))[0];  // 1 if the max stayed, 0 if m was -inf
    row_exp2(s_row, n, sub);
    float sum = 0.0f;
    for (int64_t j = 0; j < n; ++j) sum += s_row[j];
    l = l * alpha + sum;
    m = new_m;
    for (int64_t d = 0; d < p.Dv; ++d) o[d] *= alpha;
    for (int64_t j = 0; j < n; ++j) {  // o += P_j v_j
      const float pj = s_row[j];
      const float* vj = vh + (s0 + j) * p.Dv;
      for (int64_t d = 0; d < p.Dv; ++d) o[d] += vj[d] * pj;
    }
  }

  float z = kInf;
  if (l > 0.0f) {
    const float inv = 1.0f / l;
    for (int64_t d = 0; d < p.Dv; ++d) o[d] = o[d] * inv;
    z = m + std::log2(l);
    lse[bh * p.T + t0] = kLn2 * z;
  } else {  // fully masked row: zero output, and exp(s - lse) = 0 everywhere
    std::fill(o, o + p.Dv, 0.0f);
    lse[bh * p.T + t0] = kInf;
  }

  if (!weights) return;
  float* w = weights + (bh * p.T + t0) * p.S;  // (S)
  std::fill(w, w + p.S, 0.0f);
  for (int64_t s0 = 0; s0 < kend; s0 += kBk) {
    const int64_t n = std::min(kBk, kend - s0);
    if (!tile_has_keys(p, b, s0, n)) continue;
    scores(s0, n);
    row_exp2(s_row, n, z);
    std::copy(s_row, s_row + n, w + s0);
  }
}

// Forward: one (b, h, query tile) item, keys in tiles of Bk with the online softmax in base 2
// (2^(s log2 e) = e^s, and exp2 is cheaper than exp); finally out = Oᵀᵀ / l and the natural
// lse = ln 2 · (m + log2 l).
void forward_item(const SdpaProblem& p, int64_t item, const float* q, const float* k, const float* v, float* out,
                  float* lse, float* weights, float* scratch) {
  const int64_t nq = ceil_div(p.T, kBq);
  const int64_t bh = item / nq;
  const int64_t t0 = (item % nq) * kBq;
  const int64_t b = bh / p.H;
  const int64_t rows = std::min(kBq, p.T - t0);
  if (rows == 1 && p.Dh <= kBq) return forward_one_query(p, bh, t0, q, k, v, out, lse, weights, scratch);
  const int64_t cols = ceil_div(rows, 2 * kLanes) * 2 * kLanes;  // lanes computed: rows rounded up to 16
  const float* qt = q + (bh * p.T + t0) * p.Dh;                  // (rows, Dh)
  const float* kh = k + bh * p.S * p.Dh;                         // (S, Dh)
  const float* vh = v + bh * p.S * p.Dv;                         // (S, Dv)
  float* o = out + (bh * p.T + t0) * p.Dv;                       // (rows, Dv)
  float* row_lse = lse + bh * p.T + t0;                          // (rows)
  float* m = scratch;                                            // (Bq) running max
  float* l = m + kBq;                                            // (Bq) running sum
  float* z = l + kBq;                                            // (Bq) base-2 lse, +inf in the padding lanes
  float* q_t = z + kBq;                                          // (Dh, Bq) scale · log2 e · qᵀ, zero padding lanes
  float* o_t = q_t + p.Dh * kBq;                                 // (Dv, Bq) output accumulator
  float* s_t = o_t + p.Dv * kBq;                                 // (Bk, Bq) scores, then probabilities

  // Only the first `cols` lanes of each row are used: a one-query item (decoding) touches 16.
  std::fill(m, m + cols, -kInf);
  std::fill(l, l + cols, 0.0f);
  for (int64_t d = 0; d < p.Dv; ++d) std::fill(o_t + d * kBq, o_t + d * kBq + cols, 0.0f);
  const float scale2 = p.scale * kLog2e;
  for (int64_t d = 0; d < p.Dh; ++d) {
    float* lane = q_t + d * kBq;
    for (int64_t i = 0; i < rows; ++i) lane[i] = scale2 * qt[i * p.Dh + d];
    std::fill(lane + rows, lane + cols, 0.0f);
  }
  const int64_t kend = key_end(p, b, t0 + rows);

  const int64_t shift = causal_shift(p);
  for (int64_t s0 = 0; s0 < kend; s0 += kBk) {
    const int64_t n = std::min(kBk, kend - s0);
    if (!tile_has_keys(p, b, s0, n)) continue;
    if (!p.causal || s0 + n - 1 <= t0 + shift) {  // lane 0 sees every key of the tile
      broadcast_gemm(n, cols, p.Dh, kh + s0 * p.Dh, p.Dh, 1, q_t, kBq, s_t, kBq, false);
      finish_scores_t(p, bh, t0, rows, cols, s0, n, s_t, kBq);
      online_softmax_tile(s_t, n, cols, kBq, m, l, o_t, p.Dv, nullptr);
      broadcast_gemm(p.Dv, cols, n, vh + s0 * p.Dv, 1, p.Dv, s_t, kBq, o_t, kBq, true);
      continue;
    }
    // The causal diagonal crosses the tile: key s0 + j is visible to lanes i >= s0 + j - t0 -
    // shift. Each strip of keys computes its scores from the first 16-lane block that sees
    // its first key (finish_scores_t sets the lanes before to -inf), and each lane block's
    // softmax and P V read only the keys some lane of it sees. Every element's sum is the
    // full tile's, less exact zeros.
    for (int64_t j0 = 0; j0 < n; j0 += kCausalStrip) {
      const int64_t h = std::min(kCausalStrip, n - j0);
      const int64_t c0 = std::clamp<int64_t>(s0 + j0 - t0 - shift, 0, cols - 1) / (2 * kLanes) * (2 * kLanes);
      broadcast_gemm(h, cols - c0, p.Dh, kh + (s0 + j0) * p.Dh, p.Dh, 1, q_t + c0, kBq, s_t + j0 * kBq + c0, kBq,
                     false);
    }
    finish_scores_t(p, bh, t0, rows, cols, s0, n, s_t, kBq);
    int64_t block_keys[kBq / (2 * kLanes)];  // keys [0, block_keys[c / 16]) seen by lanes [c, c + 16)
    for (int64_t c = 0; c < cols; c += 2 * kLanes)
      block_keys[c / (2 * kLanes)] = std::clamp<int64_t>(t0 + c + 2 * kLanes + shift - s0, 0, n);
    online_softmax_tile(s_t, n, cols, kBq, m, l, o_t, p.Dv, block_keys);
    for (int64_t c = 0; c < cols; c += 2 * kLanes) {
      const int64_t nc = block_keys[c / (2 * kLanes)];
      if (nc > 0) broadcast_gemm(p.Dv, 2 * kLanes, nc, vh + s0 * p.Dv, 1, p.Dv, s_t + c, kBq, o_t + c, kBq, true);
    }
  }

  std::fill(z, z + cols, kInf);
  for (int64_t i = 0; i < rows; ++i) {
    float* orow = o + i * p.Dv;
    if (l[i] > 0.0f) {
      const float inv = 1.0f / l[i];
      for (int64_t d = 0; d < p.Dv; ++d) orow[d] = o_t[d * kBq + i] * inv;
      z[i] = m[i] + std::log2(l[i]);
      row_lse[i] = kLn2 * z[i];
    } else {  // fully masked row: zero output, and exp(s - lse) = 0 everywhere
      std::fill(orow, orow + p.Dv, 0.0f);
      row_lse[i] = kInf;
    }
  }

  if (!weights) return;
  // Second pass with the final statistics: weights = 2^(s₂ - lse₂) = exp(s - lse).
  float* w = weights + (bh * p.T + t0) * p.S;  // (rows, S)
  for (int64_t i = 0; i < rows; ++i) std::fill(w + i * p.S, w + (i + 1) * p.S, 0.0f);
  for (int64_t s0 = 0; s0 < kend; s0 += kBk) {
    const int64_t n = std::min(kBk, kend - s0);
    if (!tile_has_keys(p, b, s0, n)) continue;
    broadcast_gemm(n, cols, p.Dh, kh + s0 * p.Dh, p.Dh, 1, q_t, kBq, s_t, kBq, false);
    finish_scores_t(p, bh, t0, rows, cols, s0, n, s_t, kBq);
    final_weights_tile(s_t, n, cols, kBq, z);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < n; ++j) w[i * p.S + s0 + j] = s_t[j * kBq + i];
  }
}

// ---------------------------------------------------------------------------------------
// Backward: one (query tile, key tile) pair of head bh, recomputing P from the saved
// statistics, keys along the lanes. Accumulates into the non-null gradient pointers:
//   dv_j += P_ijᵀ dO_i,  dS_ij = P_ij ⊙ (dO_i V_jᵀ + dW_ij - D_i),
//   dq_i += scale · dS_ij K_j,  dk_j += scale · dS_ijᵀ Q_i.
// The tile's K and V are transposed once into (Dh, n) and (Dv, n) so that P = Q Kᵀ and
// dO Vᵀ are broadcast products; the other three read their operands where they lie.
struct BackwardInputs {
  const float* q;
  const float* k;
  const float* v;
  const float* lse;
  const float* dout;
  const float* dweights;
  const float* delta;
};

// A worker's backward scratch: P and dS of one tile, and the key tile (bh, kj) transposed,
// kept for the query tiles that follow it (the schedules run a key tile's query tiles in a row).
struct BackwardScratch {
  float* P;                  // (Bq, Bkb) probabilities
  float* dS;                 // (Bq, Bkb) dP, then scale · dS
  float* k_t;                // (Dh, Bkb) scale · log2 e · Kᵀ
  float* v_t;                // (Dv, Bkb) Vᵀ (filled when dout is given)
  int64_t bh = -1, kj = -1;  // the key tile in k_t and v_t

  BackwardScratch(const SdpaProblem& p, float* scratch)
      : P(scratch), dS(P + kBq * kBkb), k_t(dS + kBq * kBkb), v_t(k_t + p.Dh * kBkb) {}
};

// Fills w.k_t and w.v_t with key tile kj of head bh (every key some query row can see),
// unless they hold it already.
void load_key_tile(const SdpaProblem& p, const BackwardInputs& in, int64_t bh, int64_t kj, BackwardScratch& w) {
  if (w.bh == bh && w.kj == kj) return;
  w.bh = bh, w.kj = kj;
  const int64_t s0 = kj * kBkb;
  const int64_t n = std::min(kBkb, key_end(p, bh / p.H, p.T) - s0);
  const float scale2 = p.scale * kLog2e;
  const float* kt = in.k + (bh * p.S + s0) * p.Dh;  // (n, Dh)
  for (int64_t j = 0; j < n; ++j)
    for (int64_t d = 0; d < p.Dh; ++d) w.k_t[d * kBkb + j] = scale2 * kt[j * p.Dh + d];
  if (!in.dout) return;
  const float* vt = in.v + (bh * p.S + s0) * p.Dv;  // (n, Dv)
  for (int64_t j = 0; j < n; ++j)
    for (int64_t d = 0; d < p.Dv; ++d) w.v_t[d * kBkb + j] = vt[j * p.Dv + d];
}

// Queries [t0, t0 + rows) against keys [s0, s0 + n) of head bh, with the key tile's k_t and
// v_t already filled (for at least n keys). The products' inner sums run over the block's
// rows (dK, dV) or keys (dQ) in increasing order, so splitting a tile into row strips, each
// with the keys it sees, leaves every gradient element's sum as the whole tile's, less zeros.
void backward_block(const SdpaProblem& p, const BackwardInputs& in, int64_t bh, int64_t t0, int64_t rows, int64_t s0,
                    int64_t n, float* dq, float* dk, float* dv, const BackwardScratch& w) {
  const float* qt = in.q + (bh * p.T + t0) * p.Dh;  // (rows, Dh)
  const float* kt = in.k + (bh * p.S + s0) * p.Dh;  // (n, Dh)
  const float* row_lse = in.lse + bh * p.T + t0;
  const float* row_delta = in.delta + bh * p.T + t0;
  const float* dot = in.dout ? in.dout + (bh * p.T + t0) * p.Dv : nullptr;  // (rows, Dv)

  broadcast_gemm(rows, n, p.Dh, qt, p.Dh, 1, w.k_t, kBkb, w.P, kBkb, false);
  finish_scores(p, bh, t0, rows, s0, n, w.P, kBkb);
  for (int64_t i = 0; i < rows; ++i) row_exp2(w.P + i * kBkb, n, kLog2e * row_lse[i]);  // lse = +inf → 0
  if (dv && dot) broadcast_gemm(n, p.Dv, rows, w.P, 1, kBkb, dot, p.Dv, dv + (bh * p.S + s0) * p.Dv, p.Dv, true);
  if (!dq && !dk && !p.dscores) return;

  if (dot) {
    broadcast_gemm(rows, n, p.Dv, dot, p.Dv, 1, w.v_t, kBkb, w.dS, kBkb, false);
  } else {
    for (int64_t i = 0; i < rows; ++i) std::fill(w.dS + i * kBkb, w.dS + i * kBkb + n, 0.0f);
  }
  for (int64_t i = 0; i < rows; ++i) {
    float* ds = w.dS + i * kBkb;
    const float* pr = w.P + i * kBkb;
    if (in.dweights) {
      const float* dw = in.dweights + (bh * p.T + t0 + i) * p.S + s0;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) ds[j] += dw[j];
    }
    if (p.dscores) {  // dS itself (unscaled): ∂L/∂bias
      row_softmax_grad(ds, pr, n, row_delta[i], 1.0f);
      float* out = p.dscores + (bh * p.T + t0 + i) * p.S + s0;
      std::copy(ds, ds + n, out);
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) ds[j] *= p.scale;
    } else {
      row_softmax_grad(ds, pr, n, row_delta[i], p.scale);
    }
  }
  if (dq) broadcast_gemm(rows, p.Dh, n, w.dS, kBkb, 1, kt, p.Dh, dq + (bh * p.T + t0) * p.Dh, p.Dh, true);
  if (dk) broadcast_gemm(n, p.Dh, rows, w.dS, 1, kBkb, qt, p.Dh, dk + (bh * p.S + s0) * p.Dh, p.Dh, true);
}

void backward_tile(const SdpaProblem& p, const BackwardInputs& in, int64_t bh, int64_t qi, int64_t kj, float* dq,
                   float* dk, float* dv, BackwardScratch& w) {
  const int64_t b = bh / p.H;
  const int64_t t0 = qi * kBq;
  const int64_t rows = std::min(kBq, p.T - t0);
  const int64_t s0 = kj * kBkb;
  const int64_t kend = key_end(p, b, t0 + rows);
  if (s0 >= kend) return;
  const int64_t n = std::min(kBkb, kend - s0);
  if (!tile_has_keys(p, b, s0, n)) return;
  load_key_tile(p, in, bh, kj, w);

  // Causal: when the diagonal crosses the tile (its first strip does not see all n keys),
  // each strip of rows takes only the keys up to its last row's.
  if (!p.causal || key_end(p, b, t0 + std::min(kCausalStrip, rows)) - s0 >= n) {
    backward_block(p, in, bh, t0, rows, s0, n, dq, dk, dv, w);
    return;
  }
  for (int64_t a = 0; a < rows; a += kCausalStrip) {
    const int64_t h = std::min(kCausalStrip, rows - a);
    const int64_t ns = std::min(n, key_end(p, b, t0 + a + h) - s0);
    if (ns > 0) backward_block(p, in, bh, t0 + a, h, s0, ns, dq, dk, dv, w);
  }
}

}  // namespace

int64_t sdpa_forward_workers(const SdpaProblem& p) { return workers_for(p.B * p.H * ceil_div(p.T, kBq)); }
int64_t sdpa_forward_scratch_floats(const SdpaProblem& p) { return (3 + p.Dh + p.Dv + kBk) * kBq; }
int64_t sdpa_backward_workers(const SdpaProblem& p) {
  return workers_for(p.B * p.H * std::max(ceil_div(p.T, kBq), ceil_div(p.S, kBkb)));
}
int64_t sdpa_backward_scratch_floats(const SdpaProblem& p) { return (2 * kBq + p.Dh + p.Dv) * kBkb; }

void sdpa_forward(const SdpaProblem& p, const float* q, const float* k, const float* v, float* out, float* lse,
                  float* weights, float* scratch, int64_t workers) {
  const int64_t items = p.B * p.H * ceil_div(p.T, kBq);
  run_items(items, workers, scratch, sdpa_forward_scratch_floats(p),
            [&](int64_t item, float* s) { forward_item(p, item, q, k, v, out, lse, weights, s); });
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
  if (!dq && !dk && !dv && !p.dscores) return;

  const BackwardInputs in{q, k, v, lse, dout, dweights, delta};
  const int64_t nq = ceil_div(p.T, kBq);
  const int64_t nk = ceil_div(p.S, kBkb);
  const int64_t per = sdpa_backward_scratch_floats(p);
  // Each dq_i sums its key tiles in increasing j and each dk_j / dv_j its query tiles in
  // increasing i under both schedules, so they give identical bits.
  const bool per_head = heads >= workers && (heads % workers == 0 || heads >= 3 * workers);
  if (per_head) {
    run_items(heads, workers, scratch, per, [&](int64_t bh, float* s) {
      BackwardScratch w(p, s);
      for (int64_t kj = 0; kj < nk; ++kj)
        for (int64_t qi = 0; qi < nq; ++qi) backward_tile(p, in, bh, qi, kj, dq, dk, dv, w);
    });
    return;
  }
  if (dk || dv) {
    run_items(heads * nk, workers, scratch, per, [&](int64_t item, float* s) {
      const int64_t bh = item / nk;
      const int64_t kj = item % nk;
      BackwardScratch w(p, s);
      for (int64_t qi = 0; qi < nq; ++qi) backward_tile(p, in, bh, qi, kj, nullptr, dk, dv, w);
    });
  }
  if (dq || p.dscores) {  // dscores: each (t, s') of a head written by one item
    run_items(heads * nq, workers, scratch, per, [&](int64_t item, float* s) {
      const int64_t bh = item / nq;
      const int64_t qi = item % nq;
      BackwardScratch w(p, s);
      for (int64_t kj = 0; kj < nk; ++kj) backward_tile(p, in, bh, qi, kj, dq, nullptr, nullptr, w);
    });
  }
}

}  // namespace attn::kernels::inline ATTN_ISA_NS
