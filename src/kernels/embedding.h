#pragma once
// Embedding lookup kernels: raw pointers and sizes, no checks (ids are validated at the op
// boundary), no allocation. The backward kernel accumulates (+=).
#include <cstdint>

#include "kernels/isa.h"

namespace attn::kernels {

// y[p, :] = weight[ids[p], :]. ids (n), weight (V, D), y (n, D).
ATTN_KERNEL(embedding_forward, void(const int32_t* ids, const float* weight, float* y, int64_t n, int64_t d));

// dweight[ids[p], :] += dy[p, :] for every p with ids[p] != padding_idx (-1: none).
// Threads split the D columns, each walking the positions in order, so every element of
// dweight sums its contributions in position order whatever the thread count.
ATTN_KERNEL(embedding_backward,
            void(const int32_t* ids, const float* dy, float* dweight, int64_t n, int64_t d, int32_t padding_idx));

}  // namespace attn::kernels
