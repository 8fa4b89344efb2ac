#include "attn/nn/init.h"

#include <cmath>

#include "test_support.h"

namespace attn::nn {
namespace {

struct Stats {
  double mean = 0, var = 0, min = 1e30, max = -1e30;
};

Stats stats_of(const Tensor& t) {
  Stats s;
  const std::vector<float> v = t.to_vector();
  for (float x : v) {
    s.mean += x;
    s.min = std::min<double>(s.min, x);
    s.max = std::max<double>(s.max, x);
  }
  s.mean /= static_cast<double>(v.size());
  for (float x : v) s.var += (x - s.mean) * (x - s.mean);
  s.var /= static_cast<double>(v.size());
  return s;
}

// Checks a U(-a, a) sample: every value inside the bounds, the extremes near them, mean
// ~0 and variance a²/3 (n >= 10⁴: the variance's relative standard error is < 1%).
void expect_uniform(const Tensor& t, double a) {
  const Stats s = stats_of(t);
  EXPECT_GE(s.min, -a);
  EXPECT_LT(s.max, a);
  EXPECT_LT(s.min, -0.99 * a);
  EXPECT_GT(s.max, 0.99 * a);
  EXPECT_NEAR(s.mean, 0.0, 0.02 * a);
  EXPECT_NEAR(s.var, a * a / 3.0, 0.04 * a * a / 3.0);
}

void expect_normal(const Tensor& t, double mean, double std) {
  const Stats s = stats_of(t);
  EXPECT_NEAR(s.mean, mean, 0.03 * std);
  EXPECT_NEAR(std::sqrt(s.var), std, 0.03 * std);
}

TEST(Init, FansAsPyTorch) {
  EXPECT_EQ(fan_in_and_fan_out(Tensor::zeros({3, 5})), std::make_pair(int64_t{5}, int64_t{3}));
  // (out, in, kh, kw): receptive field 2·2
  EXPECT_EQ(fan_in_and_fan_out(Tensor::zeros({4, 3, 2, 2})), std::make_pair(int64_t{12}, int64_t{16}));
  EXPECT_THROW_MSG(fan_in_and_fan_out(Tensor::zeros({7})), ValueError, "rank >= 2, got shape (7)");
}

TEST(Init, XavierUniformBoundsAndVariance) {
  Rng rng(1);
  Tensor w = Tensor::empty({200, 300});
  xavier_uniform_(w, rng);
  expect_uniform(w, std::sqrt(6.0 / 500.0));
  Tensor g = Tensor::empty({100, 150});
  xavier_uniform_(g, rng, 2.0f);
  expect_uniform(g, 2.0 * std::sqrt(6.0 / 250.0));
}

TEST(Init, XavierNormalStd) {
  Rng rng(2);
  Tensor w = Tensor::empty({200, 300});
  xavier_normal_(w, rng, 0.5f);
  expect_normal(w, 0.0, 0.5 * std::sqrt(2.0 / 500.0));
}

TEST(Init, UniformNormalZerosOnes) {
  Rng rng(3);
  Tensor t = Tensor::empty({20000});
  uniform_(t, 1.0f, 3.0f, rng);
  const Stats s = stats_of(t);
  EXPECT_GE(s.min, 1.0);
  EXPECT_LT(s.max, 3.0);
  EXPECT_NEAR(s.mean, 2.0, 0.02);
  normal_(t, -1.0f, 0.25f, rng);
  expect_normal(t, -1.0, 0.25);
  zeros_(t);
  EXPECT_EQ(stats_of(t).max, 0.0);
  ones_(t);
  EXPECT_EQ(stats_of(t).min, 1.0);
  EXPECT_EQ(stats_of(t).max, 1.0);
}

TEST(Init, PyTorchModuleDefaults) {
  Rng rng(4);
  // nn.Linear(in=400, out=60): W and b ~ U(-1/√400, 1/√400) = U(-0.05, 0.05)
  Tensor w = Tensor::empty({60, 400});
  Tensor b = Tensor::empty({60});
  linear_default_init_(w, b, rng);
  expect_uniform(w, 0.05);
  const Stats sb = stats_of(b);
  EXPECT_GE(sb.min, -0.05);
  EXPECT_LT(sb.max, 0.05);
  EXPECT_GT(sb.max - sb.min, 0.05);  // spread over the range, not a constant
  Tensor w2 = Tensor::empty({60, 400});
  linear_default_init_(w2, rng);  // no bias
  expect_uniform(w2, 0.05);
  // GRU hidden 64: U(-1/8, 1/8)
  Tensor r = Tensor::empty({192, 100});
  rnn_default_init_(r, 64, rng);
  expect_uniform(r, 0.125);
  // Embedding: N(0, 1), padding row zero.
  Tensor e = Tensor::empty({500, 64});
  embedding_default_init_(e, rng, 3);
  expect_normal(e, 0.0, 1.0);
  for (int64_t j = 0; j < 64; ++j) EXPECT_EQ(e.f32()[3 * 64 + j], 0.0f);
  EXPECT_NE(e.f32()[2 * 64], 0.0f);
}

TEST(Init, SameSeedSameValues) {
  Rng a(7), b(7), c(8);
  Tensor x = Tensor::empty({5, 6}), y = Tensor::empty({5, 6}), z = Tensor::empty({5, 6});
  xavier_uniform_(x, a);
  xavier_uniform_(y, b);
  xavier_uniform_(z, c);
  EXPECT_EQ(x.to_vector(), y.to_vector());
  EXPECT_NE(x.to_vector(), z.to_vector());
}

TEST(Init, Errors) {
  Rng rng(5);
  Tensor ids = Tensor::zeros({2, 2}, DType::i32);
  EXPECT_THROW_MSG(xavier_uniform_(ids, rng), ValueError, "xavier_uniform_: expected a float32 tensor, got int32");
  Tensor undefined;
  EXPECT_THROW_MSG(zeros_(undefined), ValueError, "zeros_: undefined tensor");
  Tensor v = Tensor::zeros({4});
  EXPECT_THROW_MSG(xavier_normal_(v, rng), ValueError, "xavier_normal_: fan in and fan out need a tensor of rank >= 2");
  EXPECT_THROW_MSG(uniform_(v, 2.0f, 1.0f, rng), ValueError, "uniform_: lo must be <= hi");
  EXPECT_THROW_MSG(uniform_(v, NAN, 1.0f, rng), ValueError, "uniform_: lo must be finite");
  EXPECT_THROW_MSG(normal_(v, 0.0f, -1.0f, rng), ValueError, "normal_: std must be >= 0");
  EXPECT_THROW_MSG(rnn_default_init_(v, 0, rng), ValueError, "hidden size must be > 0, got 0");
  Tensor w = Tensor::zeros({3, 4});
  Tensor bad_bias = Tensor::zeros({4});
  EXPECT_THROW_MSG(linear_default_init_(w, bad_bias, rng), ValueError, "'bias' expected (3), got (4)");
  EXPECT_THROW_MSG(linear_default_init_(v, rng), ValueError, "'weight' expected rank 2 (out, in), got shape (4)");
  EXPECT_THROW_MSG(embedding_default_init_(w, rng, 3), ValueError, "padding_idx 3 is outside the vocabulary of 3");
}

}  // namespace
}  // namespace attn::nn
