#include "attn/nn/layers.h"

#include <array>

#include "attn/nn/init.h"
#include "attn/ops/dropout.h"
#include "attn/ops/embedding.h"
#include "attn/ops/layer_norm.h"
#include "attn/ops/linear.h"
#include "attn/ops/rnn_cell.h"

namespace attn::nn {

namespace {
void check_positive(const char* layer, const char* what, int64_t value) {
  if (value <= 0)
    throw ValueError(std::string(layer) + ": " + what + " must be positive, got " + std::to_string(value));
}
}  // namespace

Linear::Linear(int64_t in_features, int64_t out_features, Rng& rng, bool with_bias) {
  check_positive("Linear", "in_features", in_features);
  check_positive("Linear", "out_features", out_features);
  weight = register_parameter("weight", Tensor::empty({out_features, in_features}));
  if (with_bias) {
    bias = register_parameter("bias", Tensor::empty({out_features}));
    linear_default_init_(weight, bias, rng);
  } else {
    linear_default_init_(weight, rng);
  }
}

Tensor Linear::forward(const Tensor& x) const { return linear(x, weight, bias); }

Embedding::Embedding(int64_t vocab, int64_t dim, Rng& rng, int32_t padding_idx_) : padding_idx(padding_idx_) {
  check_positive("Embedding", "vocab", vocab);
  check_positive("Embedding", "dim", dim);
  if (padding_idx >= vocab)
    throw ValueError("Embedding: padding_idx " + std::to_string(padding_idx) + " outside the vocabulary of " +
                     std::to_string(vocab));
  weight = register_parameter("weight", Tensor::empty({vocab, dim}));
  embedding_default_init_(weight, rng, padding_idx);
}

Tensor Embedding::forward(const Tensor& ids) const { return embedding(ids, weight, {.padding_idx = padding_idx}); }

LayerNorm::LayerNorm(int64_t dim, float eps_) : eps(eps_) {
  check_positive("LayerNorm", "dim", dim);
  weight = register_parameter("weight", Tensor::full({dim}, 1.0f));
  bias = register_parameter("bias", Tensor::zeros({dim}));
}

Tensor LayerNorm::forward(const Tensor& x) const { return layer_norm(x, weight, bias, {.eps = eps}); }

Dropout::Dropout(float p_, uint64_t seed) : p(p_), rng_(seed) {
  if (!(p >= 0.0f && p < 1.0f)) throw ValueError("Dropout: p must be in [0, 1), got " + std::to_string(p));
  register_random_stream("rng", rng_);
}

Tensor Dropout::forward(const Tensor& x) {
  if (!is_training() || p == 0.0f) return x;
  return dropout(x, p, rng_.next(), true);
}

namespace {
// A recurrent cell's weight_ih (G·H, I), weight_hh (G·H, H), bias_ih and bias_hh (G·H), for
// G gates, registered in that order and drawn as PyTorch does (U(±1/√H)).
void register_cell_weights(Module& cell, const char* name, int64_t gates, int64_t input_size, int64_t hidden, Rng& rng,
                           std::array<Tensor*, 4> weights) {
  check_positive(name, "input_size", input_size);
  check_positive(name, "hidden_size", hidden);
  const Shape shapes[] = {{gates * hidden, input_size}, {gates * hidden, hidden}, {gates * hidden}, {gates * hidden}};
  const char* names[] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
  for (size_t i = 0; i < weights.size(); ++i) *weights[i] = cell.register_parameter(names[i], Tensor::empty(shapes[i]));
  for (Tensor* t : weights) rnn_default_init_(*t, hidden, rng);
}
}  // namespace

GRUCell::GRUCell(int64_t input_size, int64_t hidden, Rng& rng) : hidden_size(hidden) {
  register_cell_weights(*this, "GRUCell", 3, input_size, hidden, rng, {&weight_ih, &weight_hh, &bias_ih, &bias_hh});
}

Tensor GRUCell::forward(const Tensor& x, const Tensor& h) const {
  return gru_cell(x, h, weight_ih, weight_hh, bias_ih, bias_hh);
}

LSTMCell::LSTMCell(int64_t input_size, int64_t hidden, Rng& rng) : hidden_size(hidden) {
  register_cell_weights(*this, "LSTMCell", 4, input_size, hidden, rng, {&weight_ih, &weight_hh, &bias_ih, &bias_hh});
}

std::pair<Tensor, Tensor> LSTMCell::forward(const Tensor& x, const Tensor& h, const Tensor& c) const {
  return lstm_cell(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh);
}

}  // namespace attn::nn
