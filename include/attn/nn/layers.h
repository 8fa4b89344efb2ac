#pragma once
// Basic layers as modules, with PyTorch's parameter names and default initialisation,
// so a state_dict from torch.nn.Linear / Embedding / LayerNorm / GRUCell / LSTMCell
// loads unchanged.
#include <cstdint>
#include <utility>

#include "attn/nn/module.h"
#include "attn/random.h"

namespace attn::nn {

// y = x Wᵀ + b. weight (OUT, IN), bias (OUT). x (..., IN) → (..., OUT).
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, Rng& rng, bool bias = true);
  Tensor forward(const Tensor& x) const;
  Tensor weight, bias;  // bias undefined when built without one
};

// ids (...) int32 → (..., D). weight (V, D); the padding row (if any) gets no gradient.
class Embedding : public Module {
 public:
  Embedding(int64_t vocab, int64_t dim, Rng& rng, int32_t padding_idx = -1);
  Tensor forward(const Tensor& ids) const;
  Tensor weight;
  int32_t padding_idx;
};

// Normalises the last dimension (D): weight (D) = 1, bias (D) = 0 at start.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t dim, float eps = 1e-5f);
  Tensor forward(const Tensor& x) const;
  Tensor weight, bias;
  float eps;
};

// Inverted dropout, active only in training mode. Each call draws a fresh seed from the
// module's generator, so a fixed construction seed gives a reproducible run.
class Dropout : public Module {
 public:
  Dropout(float p, uint64_t seed);
  Tensor forward(const Tensor& x);
  float p;

 private:
  Rng rng_;
};

// One GRU step: h' (B, H) from x (B, I) and h (B, H). weight_ih (3H, I), weight_hh (3H, H),
// bias_ih / bias_hh (3H); gate order r, z, n as torch.nn.GRUCell.
class GRUCell : public Module {
 public:
  GRUCell(int64_t input_size, int64_t hidden_size, Rng& rng);
  Tensor forward(const Tensor& x, const Tensor& h) const;
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;
  int64_t hidden_size;
};

// One LSTM step: (h', c') from x (B, I), h and c (B, H). Gate order i, f, g, o as
// torch.nn.LSTMCell.
class LSTMCell : public Module {
 public:
  LSTMCell(int64_t input_size, int64_t hidden_size, Rng& rng);
  std::pair<Tensor, Tensor> forward(const Tensor& x, const Tensor& h, const Tensor& c) const;
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;
  int64_t hidden_size;
};

}  // namespace attn::nn
