#include "small_gemm.h"

#include <algorithm>
#include <vector>

#include "attn/parallel.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace attn::kernels {

#if defined(__AVX512F__)
namespace {

constexpr int64_t kLanes = 16;                     // floats in one zmm register
constexpr int64_t kTileRows = 6;                   // rows of the broadcast operand per tile
constexpr int64_t kTileVecs = 4;                   // vectors of the streamed operand per tile
constexpr int64_t kTileCols = kTileVecs * kLanes;  // 6 × 64: 24 accumulators of 32 registers
// The k loop runs in chunks, so that a chunk of the streamed operand (kChunk × 64 floats,
// 32 KiB) stays in L1 while every row block of the broadcast one passes over it. C holds the
// partial sums between chunks.
constexpr int64_t kChunk = 128;

struct TileOut {
  float* c;
  int64_t ldc;
  float alpha, beta;
};

// c[r][0, w) = alpha · Σ_k x[r·ldx + k] · y[k·ldy + (0, w)] + beta · c[r][0, w) for r < R,
// w = the columns mask[0..V) select. x's elements are broadcast, y's rows are read where they
// lie (masked loads past w, which never fault); the R·V accumulators stay in registers for the
// whole k loop, and each sums its k terms in order.
template <int R, int V>
void tile(const float* x, int64_t ldx, const float* y, int64_t ldy, int64_t K, const __mmask16* mask,
          const TileOut& out) {
  __m512 acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    __m512 yv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) yv[v] = _mm512_maskz_loadu_ps(mask[v], y + k * ldy + v * kLanes);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 xr = _mm512_set1_ps(x[r * ldx + k]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(xr, yv[v], acc[r][v]);
    }
  }
  const __m512 alpha = _mm512_set1_ps(out.alpha), beta = _mm512_set1_ps(out.beta);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      float* p = out.c + r * out.ldc + v * kLanes;
      __m512 result = _mm512_mul_ps(alpha, acc[r][v]);
      if (out.beta != 0.0f) result = _mm512_fmadd_ps(beta, _mm512_maskz_loadu_ps(mask[v], p), result);
      _mm512_mask_storeu_ps(p, mask[v], result);
    }
}

using TileFn = void (*)(const float*, int64_t, const float*, int64_t, int64_t, const __mmask16*, const TileOut&);

template <int R>
constexpr TileFn tile_for_vecs(int64_t vecs) {
  return vecs == 1 ? tile<R, 1> : vecs == 2 ? tile<R, 2> : vecs == 3 ? tile<R, 3> : tile<R, 4>;
}
TileFn tile_for(int64_t rows, int64_t vecs) {
  switch (rows) {
    case 1: return tile_for_vecs<1>(vecs);
    case 2: return tile_for_vecs<2>(vecs);
    case 3: return tile_for_vecs<3>(vecs);
    case 4: return tile_for_vecs<4>(vecs);
    case 5: return tile_for_vecs<5>(vecs);
    default: return tile_for_vecs<6>(vecs);
  }
}

// X (rows, K) · Y (K, cols) into rows [r0, r0 + R) of the output, in column panels of 64.
void tile_row_chunk(const float* x, int64_t ldx, const float* y, int64_t ldy, int64_t K, int64_t r0, int64_t rows,
                    int64_t cols, const TileOut& out) {
  const int64_t R = std::min(kTileRows, rows - r0);
  for (int64_t c0 = 0; c0 < cols; c0 += kTileCols) {
    const int64_t w = std::min(kTileCols, cols - c0);
    const int64_t vecs = (w + kLanes - 1) / kLanes;
    __mmask16 mask[kTileVecs];
    for (int64_t v = 0; v < kTileVecs; ++v) {
      const int64_t left = std::clamp<int64_t>(w - v * kLanes, 0, kLanes);
      mask[v] = static_cast<__mmask16>((1u << left) - 1u);
    }
    const TileOut at{out.c + r0 * out.ldc + c0, out.ldc, out.alpha, out.beta};
    tile_for(R, vecs)(x + r0 * ldx, ldx, y + c0, ldy, K, mask, at);
  }
}

// Row blocks [lo, hi) of X (rows, K) · Y (K, cols), chunk by chunk of k: the first chunk
// applies out's alpha and beta, the others add alpha times theirs to C.
void tile_rows(const float* x, int64_t ldx, const float* y, int64_t ldy, int64_t K, int64_t lo, int64_t hi,
               int64_t rows, int64_t cols, const TileOut& out) {
  for (int64_t k0 = 0; k0 < K; k0 += kChunk) {
    const int64_t kc = std::min(kChunk, K - k0);
    const TileOut chunk_out{out.c, out.ldc, out.alpha, k0 == 0 ? out.beta : 1.0f};
    for (int64_t blk = lo; blk < hi; ++blk)
      tile_row_chunk(x + k0, ldx, y + k0 * ldy, ldy, kc, blk * kTileRows, rows, cols, chunk_out);
  }
}

// Enough multiply-adds per thread to pay for waking a team (a few microseconds).
int64_t row_blocks_per_chunk(int64_t m, int64_t n, int64_t k) {
  const int64_t per_block = kTileRows * std::max<int64_t>(1, n) * k;
  return std::max<int64_t>(1, (int64_t{1} << 20) / per_block);
}

std::vector<float>& scratch(int which) {
  thread_local std::vector<float> buffers[2];
  return buffers[which];
}

// C = alpha · A · B + beta · C: A's elements broadcast, B's rows streamed, in row blocks of 6.
void gemm_nn(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
             float beta, float* c, int64_t ldc) {
  const int64_t blocks = (m + kTileRows - 1) / kTileRows;
  const TileOut out{c, ldc, alpha, beta};
  parallel_for(0, blocks, row_blocks_per_chunk(m, n, k), [&](int64_t lo, int64_t hi) {
    tile_rows(a, lda, b, ldb, k, lo, hi, m, n, out);
  });
}

// C = alpha · A · Bᵀ + beta · C with B (n, k): computed transposed, Cᵀ (n, m) = B · Aᵀ, so that
// the big operand (a weight, n × k) is the broadcast one, read where it lies, and only A
// (m × k, the small one) is transposed. Each thread writes its rows of Cᵀ back as columns of C.
void gemm_nt(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
             float beta, float* c, int64_t ldc) {
  std::vector<float>& at_buf = scratch(0);
  std::vector<float>& ct_buf = scratch(1);
  if (at_buf.size() < static_cast<size_t>(k * m)) at_buf.resize(k * m);
  if (ct_buf.size() < static_cast<size_t>(n * m)) ct_buf.resize(n * m);
  float* at = at_buf.data();  // (k, m)
  float* ct = ct_buf.data();  // (n, m)
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < k; ++j) at[j * m + i] = a[i * lda + j];
  const int64_t blocks = (n + kTileRows - 1) / kTileRows;
  const TileOut to_ct{ct, m, 1.0f, 0.0f};
  parallel_for(0, blocks, row_blocks_per_chunk(n, m, k), [&](int64_t lo, int64_t hi) {
    tile_rows(b, ldb, at, m, k, lo, hi, n, m, to_ct);
    const int64_t j_lo = lo * kTileRows, j_hi = std::min(n, hi * kTileRows);
    // C[i][j] = alpha · Cᵀ[j][i] (+ beta · C[i][j]), 16 columns at a time.
    for (int64_t j0 = j_lo; j0 < j_hi; j0 += kLanes) {
      const int64_t j1 = std::min(j_hi, j0 + kLanes);
      for (int64_t i = 0; i < m; ++i) {
        float* ci = c + i * ldc;
        if (beta == 0.0f) {
          for (int64_t j = j0; j < j1; ++j) ci[j] = alpha * ct[j * m + i];
        } else {
          for (int64_t j = j0; j < j1; ++j) ci[j] = alpha * ct[j * m + i] + beta * ci[j];
        }
      }
    }
  });
}

}  // namespace

bool small_gemm(bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m < 1 || m > kSmallGemmMaxRows || n < 1 || k < 1) return false;
  if (transpose_b)
    gemm_nt(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  else
    gemm_nn(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  return true;
}

#else  // no AVX-512 in this build: BLAS does every product

bool small_gemm(bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t, float, float*,
                int64_t) {
  return false;
}

#endif

}  // namespace attn::kernels
