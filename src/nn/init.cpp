#include "attn/nn/init.h"

#include <cmath>
#include <string>

namespace attn::nn {
namespace {

float* checked_data(const char* fn, Tensor& t) {
  if (!t.defined()) throw ValueError(std::string(fn) + ": undefined tensor");
  if (t.dtype() != DType::f32)
    throw ValueError(std::string(fn) + ": expected a float32 tensor, got " + dtype_name(t.dtype()));
  return t.f32();
}

void check_finite(const char* fn, const char* what, double value) {
  if (!std::isfinite(value))
    throw ValueError(std::string(fn) + ": " + what + " must be finite, got " + std::to_string(value));
}

void fill_uniform(float* p, int64_t n, double lo, double hi, Rng& rng) {
  const double width = hi - lo;
  for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(lo + width * static_cast<double>(rng.uniform()));
}

void fill_normal(float* p, int64_t n, double mean, double std, Rng& rng) {
  for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(mean + std * static_cast<double>(rng.normal()));
}

std::pair<int64_t, int64_t> fans(const char* fn, const Tensor& t) {
  if (!t.defined()) throw ValueError(std::string(fn) + ": undefined tensor");
  if (t.rank() < 2)
    throw ValueError(std::string(fn) + ": fan in and fan out need a tensor of rank >= 2, got shape " + t.shape().str());
  int64_t receptive = 1;
  for (int i = 2; i < t.rank(); ++i) receptive *= t.dim(i);
  return {t.dim(1) * receptive, t.dim(0) * receptive};
}

}  // namespace

std::pair<int64_t, int64_t> fan_in_and_fan_out(const Tensor& t) { return fans("fan_in_and_fan_out", t); }

namespace {
// Xavier's scale gain · √(k / (fan_in + fan_out)) for t, checked as `op`; 0 for an empty t.
double xavier_scale(const char* op, const Tensor& t, float gain, double k) {
  check_finite(op, "gain", gain);
  const auto [fan_in, fan_out] = fans(op, t);
  return gain * std::sqrt(k / static_cast<double>(fan_in + fan_out));
}
}  // namespace

Tensor& xavier_uniform_(Tensor& t, Rng& rng, float gain) {
  float* p = checked_data("xavier_uniform_", t);
  const double a = xavier_scale("xavier_uniform_", t, gain, 6.0);
  if (t.numel() > 0) fill_uniform(p, t.numel(), -a, a, rng);
  return t;
}

Tensor& xavier_normal_(Tensor& t, Rng& rng, float gain) {
  float* p = checked_data("xavier_normal_", t);
  const double std = xavier_scale("xavier_normal_", t, gain, 2.0);
  if (t.numel() > 0) fill_normal(p, t.numel(), 0.0, std, rng);
  return t;
}

Tensor& uniform_(Tensor& t, float lo, float hi, Rng& rng) {
  float* p = checked_data("uniform_", t);
  check_finite("uniform_", "lo", lo);
  check_finite("uniform_", "hi", hi);
  if (lo > hi)
    throw ValueError("uniform_: lo must be <= hi, got lo = " + std::to_string(lo) + ", hi = " + std::to_string(hi));
  fill_uniform(p, t.numel(), lo, hi, rng);
  return t;
}

Tensor& normal_(Tensor& t, float mean, float std, Rng& rng) {
  float* p = checked_data("normal_", t);
  check_finite("normal_", "mean", mean);
  check_finite("normal_", "std", std);
  if (std < 0.0f) throw ValueError("normal_: std must be >= 0, got " + std::to_string(std));
  fill_normal(p, t.numel(), mean, std, rng);
  return t;
}

Tensor& zeros_(Tensor& t) {
  checked_data("zeros_", t);
  t.fill(0.0f);
  return t;
}

Tensor& ones_(Tensor& t) {
  checked_data("ones_", t);
  t.fill(1.0f);
  return t;
}

void linear_default_init_(Tensor& weight, Tensor& bias, Rng& rng) {
  float* w = checked_data("linear_default_init_", weight);
  if (weight.rank() != 2)
    throw ValueError("linear_default_init_: 'weight' expected rank 2 (out, in), got shape " + weight.shape().str());
  const int64_t out = weight.dim(0), in = weight.dim(1);
  // kaiming_uniform(a = √5): gain = √(2 / (1 + a²)) = √(1/3), bound = gain · √3 / √fan_in = 1/√fan_in.
  const double bound = in > 0 ? 1.0 / std::sqrt(static_cast<double>(in)) : 0.0;
  float* b = nullptr;
  if (bias.defined()) {
    b = checked_data("linear_default_init_", bias);
    if (bias.shape() != Shape{out})
      throw ValueError("linear_default_init_: 'bias' expected (" + std::to_string(out) + "), got " +
                       bias.shape().str());
  }
  if (in > 0) fill_uniform(w, weight.numel(), -bound, bound, rng);
  if (b != nullptr) fill_uniform(b, bias.numel(), -bound, bound, rng);
}

void linear_default_init_(Tensor& weight, Rng& rng) {
  Tensor no_bias;
  linear_default_init_(weight, no_bias, rng);
}

Tensor& rnn_default_init_(Tensor& t, int64_t hidden, Rng& rng) {
  float* p = checked_data("rnn_default_init_", t);
  if (hidden <= 0) throw ValueError("rnn_default_init_: hidden size must be > 0, got " + std::to_string(hidden));
  const double bound = 1.0 / std::sqrt(static_cast<double>(hidden));
  fill_uniform(p, t.numel(), -bound, bound, rng);
  return t;
}

Tensor& embedding_default_init_(Tensor& weight, Rng& rng, int64_t padding_idx) {
  float* p = checked_data("embedding_default_init_", weight);
  if (weight.rank() != 2)
    throw ValueError("embedding_default_init_: 'weight' expected rank 2 (V, D), got shape " + weight.shape().str());
  if (padding_idx >= weight.dim(0))
    throw ValueError("embedding_default_init_: padding_idx " + std::to_string(padding_idx) +
                     " is outside the vocabulary of " + std::to_string(weight.dim(0)));
  fill_normal(p, weight.numel(), 0.0, 1.0, rng);
  if (padding_idx >= 0) {
    float* row = p + padding_idx * weight.dim(1);
    for (int64_t j = 0; j < weight.dim(1); ++j) row[j] = 0.0f;
  }
  return weight;
}

}  // namespace attn::nn
