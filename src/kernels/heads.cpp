#include "kernels/heads.h"

#include <algorithm>

#include "attn/parallel.h"
#include "kernels/blas.h"

namespace attn::kernels {
namespace {

// Enough work per chunk to pay for a thread: about 16k elements.
int64_t grain_for(int64_t width) { return std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(width, 1)); }

// Between rows (B, T, W), head h at columns [offset + h·Dh, offset + (h+1)·Dh), and blocks
// (B, H, T, Dh), either way (ToHeads: rows to blocks): a copy, or an addition into the
// destination when Accumulate. Work items are (b, h) pairs; no two write the same element.
template <bool ToHeads, bool Accumulate>
void move_heads(const float* src, float* dst, int64_t B, int64_t T, int64_t H, int64_t Dh, int64_t W, int64_t offset) {
  parallel_for(0, B * H, grain_for(T * Dh), [=](int64_t lo, int64_t hi) {
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t b = item / H, h = item % H;
      const int64_t row = b * T * W + offset + h * Dh, block = item * T * Dh;  // t = 0
      for (int64_t t = 0; t < T; ++t) {
        const float* from = src + (ToHeads ? row + t * W : block + t * Dh);
        float* to = dst + (ToHeads ? block + t * Dh : row + t * W);
        if constexpr (Accumulate) {
          for (int64_t j = 0; j < Dh; ++j) to[j] += from[j];
        } else {
          std::copy(from, from + Dh, to);
        }
      }
    }
  });
}

}  // namespace

void split_heads_forward(const float* x, float* y, int64_t B, int64_t T, int64_t H, int64_t Dh, int64_t W,
                         int64_t offset) {
  move_heads<true, false>(x, y, B, T, H, Dh, W, offset);
}

void split_heads_backward(const float* dy, float* dx, int64_t B, int64_t T, int64_t H, int64_t Dh, int64_t W,
                          int64_t offset) {
  move_heads<false, true>(dy, dx, B, T, H, Dh, W, offset);
}

void merge_heads_forward(const float* x, float* y, int64_t B, int64_t H, int64_t T, int64_t Dh) {
  move_heads<false, false>(x, y, B, T, H, Dh, H * Dh, 0);
}

void merge_heads_backward(const float* dy, float* dx, int64_t B, int64_t H, int64_t T, int64_t Dh) {
  move_heads<true, true>(dy, dx, B, T, H, Dh, H * Dh, 0);
}

void select_heads_forward(const float* x, const int32_t* heads, float* y, int64_t B, int64_t H, int64_t K, int64_t N) {
  parallel_for(0, B * K, grain_for(N), [=](int64_t lo, int64_t hi) {
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t b = item / K, i = item % K;
      const float* src = x + (b * H + heads[i]) * N;
      std::copy(src, src + N, y + item * N);
    }
  });
}

// Items are batch rows b: duplicates in `heads` hit the same dx block, so one chunk owns
// the whole (H, N) block of a batch row and adds in order of i.
void select_heads_backward(const float* dy, const int32_t* heads, float* dx, int64_t B, int64_t H, int64_t K,
                           int64_t N) {
  parallel_for(0, B, grain_for(K * N), [=](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b)
      for (int64_t i = 0; i < K; ++i) {
        const float* g = dy + (b * K + i) * N;
        float* d = dx + (b * H + heads[i]) * N;
        for (int64_t j = 0; j < N; ++j) d[j] += g[j];
      }
  });
}

void mean_heads_forward(const float* x, float* y, int64_t B, int64_t H, int64_t N) {
  const float inv = 1.0f / static_cast<float>(H);
  parallel_for(0, B, grain_for(H * N), [=](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      float* dst = y + b * N;
      std::fill(dst, dst + N, 0.0f);
      for (int64_t h = 0; h < H; ++h) {
        const float* src = x + (b * H + h) * N;
        for (int64_t j = 0; j < N; ++j) dst[j] += src[j];
      }
      for (int64_t j = 0; j < N; ++j) dst[j] *= inv;
    }
  });
}

void mean_heads_backward(const float* dy, float* dx, int64_t B, int64_t H, int64_t N) {
  const float inv = 1.0f / static_cast<float>(H);
  parallel_for(0, B * H, grain_for(N), [=](int64_t lo, int64_t hi) {
    for (int64_t item = lo; item < hi; ++item) {
      const float* g = dy + (item / H) * N;
      float* d = dx + item * N;
      for (int64_t j = 0; j < N; ++j) d[j] += g[j] * inv;
    }
  });
}

// One batched GEMM per batch row b, over the H heads (w advances by one head per item).
void head_matmul_forward(const float* x, const float* w, float* y, int64_t B, int64_t H, int64_t T, int64_t M,
                         int64_t K) {
  for (int64_t b = 0; b < B; ++b)
    gemm_batched(false, false, H, T, K, M, 1.0f, x + b * H * T * M, M, T * M, w, K, M * K, 0.0f, y + b * H * T * K, K,
                 T * K);
}

void head_matmul_backward_x(const float* dy, const float* w, float* dx, int64_t B, int64_t H, int64_t T, int64_t M,
                            int64_t K) {
  for (int64_t b = 0; b < B; ++b)
    gemm_batched(false, true, H, T, M, K, 1.0f, dy + b * H * T * K, K, T * K, w, K, M * K, 1.0f, dx + b * H * T * M, M,
                 T * M);
}

// Batch rows in order, so the sum over b is the same whatever the thread count.
void head_matmul_backward_w(const float* dy, const float* x, float* dw, int64_t B, int64_t H, int64_t T, int64_t M,
                            int64_t K) {
  for (int64_t b = 0; b < B; ++b)
    gemm_batched(true, false, H, M, K, T, 1.0f, x + b * H * T * M, M, T * M, dy + b * H * T * K, K, T * K, 1.0f, dw, K,
                 M * K);
}

}  // namespace attn::kernels
