#pragma once
// Fused GRU and LSTM cell kernels (CPU): the elementwise gate math of one time step, in
// PyTorch's gate order, so weights are interchangeable with torch.nn.GRU / LSTM /
// GRUCell / LSTMCell. The matrix products around them are kernels::gemm calls made by
// the ops (src/ops/rnn_cell.cpp). Raw pointers and sizes, no checks, no allocation.
// Rows (batch items) are split with parallel_for; every element is computed by exactly
// one chunk, so results do not depend on the thread count.
//
// GRU, gates r, z, n stacked along 3H:
//   r = σ(gx_r + gh_r), z = σ(gx_z + gh_z), n = tanh(gx_n + r ⊙ gh_n), h' = (1 − z) ⊙ n + z ⊙ h
//   with gx = x W_ihᵀ + b_ih and gh = h W_hhᵀ + b_hh.
// LSTM, gates i, f, g, o stacked along 4H:
//   i = σ(a_i), f = σ(a_f), g = tanh(a_g), o = σ(a_o), a = gx + gh,
//   c' = f ⊙ c + i ⊙ g, h' = o ⊙ tanh(c').
#include <cstdint>

#include "kernels/isa.h"

namespace attn::kernels {

// GRU forward. gates_x (B, 3H): x W_ihᵀ, plus b_ih when b_ih is null (the projected form
// passes the bias already added). b_ih, b_hh (3H) may be null. h (B, H).
// saved (B, 4H): on entry columns [0, 3H) hold h W_hhᵀ (without b_hh); on exit it holds
// [r, z, n, gh_n] where gh_n = W_hn h + b_hn, everything backward needs. h_out (B, H).
ATTN_KERNEL(gru_cell_forward, void(int64_t batch, int64_t hidden, const float* gates_x, const float* b_ih,
                                   const float* b_hh, const float* h, float* saved, float* h_out));

// GRU backward, gate part. From dh_out (B, H) and `saved` of the forward pass writes (=)
// the gradients of the pre-activations:
//   dgates_x (B, 3H) = [dr̂, dẑ, dn̂]        (the gradient of gx: x W_ihᵀ + b_ih)
//   dgates_h (B, 3H) = [dr̂, dẑ, dn̂ ⊙ r]    (the gradient of gh: h W_hhᵀ + b_hh)
// with dn̂ = dh' (1 − z)(1 − n²), dẑ = dh' (h − n) z (1 − z), dr̂ = dn̂ gh_n r (1 − r),
// and accumulates the direct term dh += dh' ⊙ z when dh is not null.
ATTN_KERNEL(gru_cell_backward, void(int64_t batch, int64_t hidden, const float* saved, const float* h,
                                    const float* dh_out, float* dgates_x, float* dgates_h, float* dh));

// LSTM forward. gates_x (B, 4H): x W_ihᵀ, plus b_ih when b_ih is null. b_ih, b_hh (4H) may
// be null. c (B, H). saved (B, 5H): on entry columns [0, 4H) hold h W_hhᵀ; on exit it holds
// [i, f, g, o, tanh(c')]. h_out, c_out (B, H).
ATTN_KERNEL(lstm_cell_forward, void(int64_t batch, int64_t hidden, const float* gates_x, const float* b_ih,
                                    const float* b_hh, const float* c, float* saved, float* h_out, float* c_out));

// LSTM backward, gate part. dh_out and dc_out (B, H) may each be null (no gradient).
// Writes (=) dgates (B, 4H), the gradient of the pre-activations a = gx + gh:
//   dc'_total = dc' + dh' o (1 − tanh²(c')),
//   dî = dc'_total g i (1 − i), df̂ = dc'_total c f (1 − f), dĝ = dc'_total i (1 − g²),
//   dô = dh' tanh(c') o (1 − o),
// and accumulates dc += dc'_total ⊙ f when dc is not null.
ATTN_KERNEL(lstm_cell_backward, void(int64_t batch, int64_t hidden, const float* saved, const float* c,
                                     const float* dh_out, const float* dc_out, float* dgates, float* dc));

}  // namespace attn::kernels
