#include "attn/nn/layers.h"

#include "attn/nn/init.h"
#include "attn/ops/dropout.h"
#include "attn/ops/embedding.h"
#include "attn/ops/layer_norm.h"
#include "attn/ops/linear.h"
#include "attn/ops/rnn_cell.h"

namespace attn::nn {

namespace {
void check_positive(const char* layer, const char* what, int64_t value) {
  if (value <= 0) throw ValueError(std::string(layer) + ": " + what + " must be positive, got " + std::to_string(value));
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

GRUCell::GRUCell(int64_t input_size, int64_t hidden, Rng& rng) : hidden_size(hidden) {
  check_positive("GRUCell", "input_size", input_size);
  check_positive("GRUCell", "hidden_size", hidden);
  weight_ih = register_parameter("weight_ih", Tensor::empty({3 * hidden, input_size}));
  weight_hh = register_parameter("weight_hh", Tensor::empty({3 * hidden, hidden}));
  bias_ih = register_parameter("bias_ih", Tensor::empty({3 * hidden}));
  bias_hh = register_parameter("bias_hh", Tensor::empty({3 * hidden}));
  for (Tensor* t : {&weight_ih, &weight_hh, &bias_ih, &bias_hh}) rnn_default_init_(*t, hidden, rng);
}

Tensor GRUCell::forward(const Tensor& x, const Tensor& h) const {
  return gru_cell(x, h, weight_ih, weight_hh, bias_ih, bias_hh);
}

LSTMCell::LSTMCell(int64_t input_size, int64_t hidden, Rng& rng) : hidden_size(hidden) {
  check_positive("LSTMCell", "input_size", input_size);
  check_positive("LSTMCell", "hidden_size", hidden);
  weight_ih = register_parameter("weight_ih", Tensor::empty({4 * hidden, input_size}));
  weight_hh = register_parameter("weight_hh", Tensor::empty({4 * hidden, hidden}));
  bias_ih = register_parameter("bias_ih", Tensor::empty({4 * hidden}));
  bias_hh = register_parameter("bias_hh", Tensor::empty({4 * hidden}));
  for (Tensor* t : {&weight_ih, &weight_hh, &bias_ih, &bias_hh}) rnn_default_init_(*t, hidden, rng);
}

std::pair<Tensor, Tensor> LSTMCell::forward(const Tensor& x, const Tensor& h, const Tensor& c) const {
  return lstm_cell(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh);
}

}  // namespace attn::nn
