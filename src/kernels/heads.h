#pragma once
// Head reshaping kernels for multi-head attention: raw pointers and sizes, no checks, no
// allocation. *_backward kernels accumulate (+=) into gradient buffers.
#include <cstdint>

namespace attn::kernels {

// One part of a packed projection: y (B, H, T, Dh) from the column band
// [offset, offset + H·Dh) of x (B, T, W), W = the row width of x (>= offset + H·Dh):
//   y[b, h, t, d] = x[b, t, offset + h·Dh + d]
void split_heads_forward(const float* x, float* y, int64_t B, int64_t T, int64_t H, int64_t Dh, int64_t W,
                         int64_t offset);
// dx[b, t, offset + h·Dh + d] += dy[b, h, t, d]   (the transpose of the copy above)
void split_heads_backward(const float* dy, float* dx, int64_t B, int64_t T, int64_t H, int64_t Dh, int64_t W,
                          int64_t offset);

// y (B, T, H·Dh) from x (B, H, T, Dh): y[b, t, h·Dh + d] = x[b, h, t, d]
void merge_heads_forward(const float* x, float* y, int64_t B, int64_t H, int64_t T, int64_t Dh);
// dx[b, h, t, d] += dy[b, t, h·Dh + d]
void merge_heads_backward(const float* dy, float* dx, int64_t B, int64_t H, int64_t T, int64_t Dh);

// y (B, K, N) from x (B, H, N): y[b, i] = x[b, heads[i]] for i < K, heads in [0, H).
void select_heads_forward(const float* x, const int32_t* heads, float* y, int64_t B, int64_t H, int64_t K, int64_t N);
// dx[b, heads[i]] += dy[b, i], in order of i (duplicates add up)
void select_heads_backward(const float* dy, const int32_t* heads, float* dx, int64_t B, int64_t H, int64_t K,
                           int64_t N);

// y (B, N) = (1/H) Σ_h x (B, H, N), summed in order of h.
void mean_heads_forward(const float* x, float* y, int64_t B, int64_t H, int64_t N);
// dx[b, h] += dy[b] / H
void mean_heads_backward(const float* dy, float* dx, int64_t B, int64_t H, int64_t N);

// Per-head matrix product: y[b, h] (T, K) = x[b, h] (T, M) · w[h] (M, K)
//   x (B, H, T, M), w (H, M, K), y (B, H, T, K)
void head_matmul_forward(const float* x, const float* w, float* y, int64_t B, int64_t H, int64_t T, int64_t M,
                         int64_t K);
// dx[b, h] += dy[b, h] w[h]ᵀ
void head_matmul_backward_x(const float* dy, const float* w, float* dx, int64_t B, int64_t H, int64_t T, int64_t M,
                            int64_t K);
// dw[h] += Σ_b x[b, h]ᵀ dy[b, h]   (summed over b in order)
void head_matmul_backward_w(const float* dy, const float* x, float* dw, int64_t B, int64_t H, int64_t T, int64_t M,
                            int64_t K);

}  // namespace attn::kernels
