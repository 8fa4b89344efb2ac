#pragma once
// Attention rollout and attention flow (Abnar & Zuidema 2020, "Quantifying Attention Flow in
// Transformers") over one sentence's self-attention, every layer and head.
//
// Input: per layer l = 1..L the weights A_l (H, N, N) of one sentence, rows the queries and
// columns the keys over its N real positions ([CLS] + tokens for transformer-cls), each row
// summing to 1 (trim a batch's padding first: sentence_layers()).
//   residual-averaged    Ã_l = ½ · mean_h A_l,h + ½ · I, rows renormalised to sum 1
//   rollout              R = Ã_L · Ã_{L−1} · … · Ã_1  (N, N); R[i][j] is the share of the
//                        top-layer state i that comes from input position j
//   flow                 the layered graph with nodes (l, i), l = 0..L, and an edge
//                        (l−1, j) → (l, i) of capacity Ã_l[i][j]; F[i][j] = the maximum flow
//                        from input node (0, j) to top node (L, i), each row then normalised
//                        to sum 1 (as the authors' code does). One max-flow per (i, j): ask
//                        for the rows needed (transformer-cls needs row 0, [CLS]).
// Computed in double, returned as float32.
#include <cstdint>
#include <vector>

#include "attn/tensor.h"

namespace attn::explain {

// Row b of a batch's per-layer weights (B, H, S, S), trimmed to its first n positions:
// per layer (H, n, n). ShapeError for a layer of another shape or rank, ValueError for b or n
// out of range.
std::vector<Tensor> sentence_layers(const std::vector<Tensor>& batch_layers, int64_t b, int64_t n);

// Ã_l for each layer: (N, N) each. ShapeError unless every layer is (H, N, N) with the same N
// (and at least one layer).
std::vector<Tensor> residual_attention(const std::vector<Tensor>& layers);

// R (N, N).
Tensor attention_rollout(const std::vector<Tensor>& layers);

// F restricted to `rows` (each in [0, N), ValueError otherwise): (rows.size(), N), row k
// for top node rows[k]. A row whose flows are all zero stays zero.
Tensor attention_flow(const std::vector<Tensor>& layers, const std::vector<int64_t>& rows);

}  // namespace attn::explain
