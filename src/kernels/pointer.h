#pragma once
// The pointer-generator's output distribution (See et al. 2017): raw pointers and sizes, no
// checks, no allocation. Rows are independent (threaded over rows); each row is computed by
// one thread in a fixed order. Backward accumulates (+=). Compiled per ISA level (isa.h): the
// mixture runs over every target token's vocabulary row, as hot as the cross-entropy.
#include <cstdint>

#include "kernels/isa.h"

namespace attn::kernels {

// Per row r (N rows), with pv = softmax(logits[r]) over V and a vocabulary extended to Vx >= V:
//   P[v]  = p_gen[r] · pv[v] (v < V, else 0)  +  (1 − p_gen[r]) · Σ_{i: src[r, i] = v} a[r, i]
//   y[v]  = log(max(P[v], floor))
// logits (N, V), p_gen (N), a and src (N, S), src ids in [0, Vx). Writes pv (N, V) and
// P (N, Vx) for backward, and y (N, Vx).
ATTN_KERNEL(pointer_mixture_forward,
            void(const float* logits, const float* p_gen, const float* a, const int32_t* src, float* pv, float* P,
                 float* y, int64_t N, int64_t V, int64_t Vx, int64_t S, float floor));
// With g[v] = dy[v] / P[v] where P[v] >= floor, else 0 (the floor's clamp passes no gradient):
//   dlogits[v] += p_gen · pv[v] · (g[v] − Σ_u pv[u] g[u])       (softmax's backward of p_gen · g)
//   da[i]      += (1 − p_gen) · g[src[i]]
//   dp_gen     += Σ_{v<V} pv[v] g[v] − Σ_i a[i] g[src[i]]
// Any of dlogits, dp_gen, da may be null (not wanted).
ATTN_KERNEL(pointer_mixture_backward, void(const float* dy, const float* p_gen, const float* a, const int32_t* src,
                                           const float* pv, const float* P, float* dlogits, float* dp_gen, float* da,
                                           int64_t N, int64_t V, int64_t Vx, int64_t S, float floor));

}  // namespace attn::kernels
