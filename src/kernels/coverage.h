#pragma once
// Coverage (See et al. 2017): raw pointers and sizes, no checks, no allocation. Rows are
// independent (threaded over rows); every output element is computed by one thread in a
// fixed order, sums in double. Backward kernels accumulate (+=).
#include <cstdint>

namespace attn::kernels {

// y[r, a] = x[r, a] + c[r] · w[a]: x, y (R, A), c (R), w (A).
void add_outer_forward(const float* x, const float* c, const float* w, float* y, int64_t R, int64_t A);
// dx[r, a] += dy[r, a];  dc[r] += Σ_a dy[r, a] w[a]  (dx or dc may be null: not wanted).
void add_outer_backward_rows(const float* dy, const float* w, float* dx, float* dc, int64_t R, int64_t A);
// dw[a] += Σ_r dy[r, a] c[r], r ascending.
void add_outer_backward_w(const float* dy, const float* c, float* dw, int64_t R, int64_t A);

// y[b] = Σ_s min(a[b, s], c[b, s]): a, c (B, S), y (B).
void min_sum_forward(const float* a, const float* c, float* y, int64_t B, int64_t S);
// The subgradient torch.minimum uses: where a < c, da += dy; where c < a, dc += dy; where
// a == c, each gets dy / 2 (da or dc may be null: not wanted).
void min_sum_backward(const float* a, const float* c, const float* dy, float* da, float* dc, int64_t B, int64_t S);

}  // namespace attn::kernels
