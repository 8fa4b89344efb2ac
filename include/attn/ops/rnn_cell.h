#pragma once
// Fused GRU and LSTM cells: one time step, one tape node each. Gate order, equations and
// weight layout are PyTorch's, so weights can be exchanged with torch.nn.GRU / LSTM /
// GRUCell / LSTMCell (weight_ih_l0 = w_ih, weight_hh_l0 = w_hh, bias_ih_l0, bias_hh_l0).
//
// GRU, gates r, z, n stacked in that order along the 3H rows of the weights:
//   r  = σ(W_ir x + b_ir + W_hr h + b_hr)
//   z  = σ(W_iz x + b_iz + W_hz h + b_hz)
//   n  = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))
//   h' = (1 − z) ⊙ n + z ⊙ h
// LSTM, gates i, f, g, o stacked along the 4H rows:
//   i = σ(..), f = σ(..), g = tanh(..), o = σ(..)   (each W_i* x + b_i* + W_h* h + b_h*)
//   c' = f ⊙ c + i ⊙ g,   h' = o ⊙ tanh(c')
//
// Biases are optional (pass an undefined Tensor()). Shapes use B batch, I input size,
// H hidden size; "3H" / "4H" name the stacked gate dimension in error messages:
//   gru_cell: 'w_hh' expected (3H=96, H=32), got (96, 16)
//
// The *_projected forms take gates_x = x W_ihᵀ + b_ih precomputed, as sequence encoders
// do after hoisting the input projection of every time step into one large GEMM; they
// run the same kernels as the unprojected forms. Every input that requires grad receives
// its gradient.
#include <utility>

#include "attn/tensor.h"

namespace attn {

// h' (B, H) from x (B, I), h (B, H), w_ih (3H, I), w_hh (3H, H), b_ih (3H), b_hh (3H).
Tensor gru_cell(const Tensor& x, const Tensor& h, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih = Tensor(),
                const Tensor& b_hh = Tensor());

// h' (B, H) from gates_x (B, 3H) = x W_ihᵀ + b_ih, h (B, H), w_hh (3H, H), b_hh (3H).
Tensor gru_cell_projected(const Tensor& gates_x, const Tensor& h, const Tensor& w_hh, const Tensor& b_hh = Tensor());

// (h', c'), each (B, H), from x (B, I), h (B, H), c (B, H), w_ih (4H, I), w_hh (4H, H),
// b_ih (4H), b_hh (4H). Either output, or both, may carry a gradient.
std::pair<Tensor, Tensor> lstm_cell(const Tensor& x, const Tensor& h, const Tensor& c, const Tensor& w_ih,
                                    const Tensor& w_hh, const Tensor& b_ih = Tensor(), const Tensor& b_hh = Tensor());

// (h', c') from gates_x (B, 4H) = x W_ihᵀ + b_ih, h (B, H), c (B, H), w_hh (4H, H), b_hh (4H).
std::pair<Tensor, Tensor> lstm_cell_projected(const Tensor& gates_x, const Tensor& h, const Tensor& c,
                                              const Tensor& w_hh, const Tensor& b_hh = Tensor());

}  // namespace attn
