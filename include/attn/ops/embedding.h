#pragma once
// Embedding lookup (torch.nn.functional.embedding).
#include <cstdint>

#include "attn/tensor.h"

namespace attn {

struct EmbeddingOptions {
  // Row of `weight` that receives no gradient (its output is still weight[padding_idx];
  // initialise that row to zeros as torch does). -1: none. Otherwise in [0, V).
  int32_t padding_idx = -1;
};

// y[..., :] = weight[ids[...], :].
//   ids    int32, any shape (...), every id in [0, V) (else ValueError naming the id, its
//          position and V)
//   weight (V, D)
//   y      (..., D)
// Backward: dweight[ids[p]] += dy[p] for every position p whose id is not padding_idx,
// summed in position order (deterministic whatever the thread count).
Tensor embedding(const Tensor& ids, const Tensor& weight, EmbeddingOptions options = {});

}  // namespace attn
