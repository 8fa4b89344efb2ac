#pragma once
// Head reshaping for multi-head attention, each op one copy and one tape node:
//
//   split_heads         (B, T, H·Dh)     → (B, H, T, Dh)
//   split_heads_packed  (B, T, P·H·Dh)   → P tensors (B, H, T, Dh)   (packed q/k/v projection)
//   merge_heads         (B, H, T, Dh)    → (B, T, H·Dh)
//   select_heads        (B, H, T, S)     → (B, K, T, S)              (weights of chosen heads)
//   mean_heads          (B, H, T, S)     → (B, T, S)                 (weights averaged over heads)
//   head_matmul         (B, H, T, M) × (H, M, K) → (B, H, T, K)      (a per-head matrix)
//
// Feature h·Dh + d of the last dimension belongs to head h, as in
// torch.nn.MultiheadAttention (x.view(B, T, H, Dh).transpose(1, 2)).
#include <cstdint>
#include <vector>

#include "attn/tensor.h"

namespace attn {

// x (B, T, H·Dh) → (B, H, T, Dh). Backward: dx[b, t, h·Dh + d] += dy[b, h, t, d].
// Errors: heads <= 0 or a last dimension not divisible by heads → ValueError naming both.
Tensor split_heads(const Tensor& x, int64_t heads);

// x (B, T, P·H·Dh) → P tensors (B, H, T, Dh): part p is the column band [p·H·Dh, (p+1)·H·Dh)
// split into heads, e.g. the (B, T, 3·D) output of a packed q/k/v projection. One node;
// any subset of the parts may receive a gradient. Errors as split_heads (parts >= 1 and
// the last dimension divisible by parts·heads).
std::vector<Tensor> split_heads_packed(const Tensor& x, int64_t heads, int64_t parts);

// x (B, H, T, Dh) → (B, T, H·Dh), the inverse of split_heads.
Tensor merge_heads(const Tensor& x);

// x (B, H, T, S) → (B, K, T, S) with y[:, i] = x[:, heads[i]]; K = heads.size() >= 1, every
// index in [0, H) (ValueError naming the index otherwise). Backward: dx[:, heads[i]] += dy[:, i].
Tensor select_heads(const Tensor& x, const std::vector<int>& heads);

// x (B, H, T, S) → (B, T, S), the mean over heads (H >= 1). Backward: dx[:, h] += dy / H.
Tensor mean_heads(const Tensor& x);

// y[b, h] = x[b, h] · w[h]: x (B, H, T, M), w (H, M, K) → (B, H, T, K).
// Backward: dx[b, h] += dy[b, h] w[h]ᵀ, dw[h] += Σ_b x[b, h]ᵀ dy[b, h].
Tensor head_matmul(const Tensor& x, const Tensor& w);

}  // namespace attn
