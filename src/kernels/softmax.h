#pragma once
// Softmax and log-softmax CPU kernels over contiguous rows: raw pointers and sizes, no
// checks, no allocation. Backward kernels accumulate (+=) into the input gradient.
//
// softmax itself is one kind of the masked-normaliser primitive (kernels/normalizer.h),
// which the fused attention ops call on their score rows; softmax_forward / _backward here
// are it over rows with a (rows, n) mask. Masks are int32, one entry per element of the row: nonzero = keep, 0 = masked
// out. A null mask keeps everything.
//
// Conventions shared by every kernel here:
//   - max-subtracted: exp is only ever taken of (x - max) <= 0, so inputs of any finite
//     magnitude (1e3, 1e30) are stable;
//   - masked positions output exactly 0 and receive no gradient (their x may hold
//     anything, even inf or NaN: it is never read into the result);
//   - a row with no kept position (fully masked) outputs all zeros and gets zero
//     gradient, never NaN. A row whose kept entries are all -inf is treated the same way
//     by the forward kernels.
//   - reductions within a row run in a fixed order (the compiler's SIMD lanes, then a
//     fixed combine), so results never depend on the thread count.
#include <cstdint>

#include "kernels/isa.h"

namespace attn::kernels {

// log(sum(exp(x))) over the kept positions of one row; -inf when none is kept (or every
// kept entry is -inf).
ATTN_KERNEL(logsumexp_row, float(const float* x, const int32_t* mask_or_null, int64_t n));

// y = x − max − log Σ exp(x − max) over the kept positions, 0 elsewhere.        // (n)
ATTN_KERNEL(log_softmax_row_forward, void(const float* x, const int32_t* mask_or_null, float* y, int64_t n));
// dx += dy − exp(y) Σ_kept dy on kept positions; nothing on masked ones.
ATTN_KERNEL(log_softmax_row_backward,
            void(const float* y, const int32_t* mask_or_null, const float* dy, float* dx, int64_t n));

// Over `rows` contiguous rows of length n, threaded over rows. Masks, when given, have the
// same (rows, n) layout as x. softmax: y = softmax(x) over the kept positions, 0 elsewhere;
// backward dx += y ⊙ (dy − Σ dy⊙y) (masked positions have y = 0 and get nothing).
ATTN_KERNEL(softmax_forward, void(const float* x, const int32_t* mask_or_null, float* y, int64_t rows, int64_t n));
ATTN_KERNEL(softmax_backward, void(const float* y, const float* dy, float* dx, int64_t rows, int64_t n));
ATTN_KERNEL(log_softmax_forward, void(const float* x, const int32_t* mask_or_null, float* y, int64_t rows, int64_t n));
ATTN_KERNEL(log_softmax_backward,
            void(const float* y, const int32_t* mask_or_null, const float* dy, float* dx, int64_t rows, int64_t n));

}  // namespace attn::kernels
