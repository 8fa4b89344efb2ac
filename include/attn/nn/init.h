#pragma once
// Parameter initialisation, as torch.nn.init and the PyTorch module defaults.
// Every function fills the tensor in place (not recorded on the tape), draws from the
// given Rng in flat element order (so a seed gives the same values on every machine),
// and returns the tensor. Tensors must be defined and float32 (ValueError otherwise).
//
// fan_in / fan_out follow torch.nn.init._calculate_fan_in_and_fan_out: for a tensor of
// shape (out, in, k...) fan_in = in * prod(k), fan_out = out * prod(k); so for a 2-D
// weight (rows, cols): fan_in = cols, fan_out = rows. Rank < 2 is a ValueError.
#include <cstdint>
#include <utility>

#include "attn/random.h"
#include "attn/tensor.h"

namespace attn::nn {

// {fan_in, fan_out} as PyTorch computes them.
std::pair<int64_t, int64_t> fan_in_and_fan_out(const Tensor& t);

// U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out)).
Tensor& xavier_uniform_(Tensor& t, Rng& rng, float gain = 1.0f);
// N(0, std²), std = gain * sqrt(2 / (fan_in + fan_out)).
Tensor& xavier_normal_(Tensor& t, Rng& rng, float gain = 1.0f);
// U(lo, hi); requires finite lo <= hi.
Tensor& uniform_(Tensor& t, float lo, float hi, Rng& rng);
// N(mean, std²); requires finite mean and std >= 0.
Tensor& normal_(Tensor& t, float mean, float std, Rng& rng);
Tensor& zeros_(Tensor& t);
Tensor& ones_(Tensor& t);

// torch.nn.Linear.reset_parameters: weight (out, in) gets kaiming_uniform(a = √5), which
// is U(-1/√in, 1/√in); bias (out) gets U(-1/√in, 1/√in) too. The bias may be undefined
// (a layer without bias: or use the two-argument overload). Weight is drawn first, then bias.
void linear_default_init_(Tensor& weight, Tensor& bias, Rng& rng);
void linear_default_init_(Tensor& weight, Rng& rng);
// torch.nn.RNN/GRU/LSTM.reset_parameters: every weight and bias U(-1/√H, 1/√H).
Tensor& rnn_default_init_(Tensor& t, int64_t hidden, Rng& rng);
// torch.nn.Embedding.reset_parameters: weight (V, D) ~ N(0, 1), and the row
// padding_idx (when >= 0) set to zeros.
Tensor& embedding_default_init_(Tensor& weight, Rng& rng, int64_t padding_idx = -1);

}  // namespace attn::nn
