#include "attn/ops/pointer.h"

#include <cmath>

#include "attn/autodiff/tape.h"
#include "attn/ops/reduce.h"
#include "attn/ops/softmax.h"
#include "attn/parallel.h"
#include "test_support.h"

namespace attn {
namespace {
using testing::gradcheck;
using testing::random_tensor;

Tensor ids(std::vector<int32_t> v, Shape shape) { return Tensor::from_vector(v, shape); }

// Rows of a random attention distribution (N, S): softmax of random scores.
Tensor random_attention(int64_t N, int64_t S, uint64_t seed) {
  autodiff::NoGradGuard no_grad;
  return softmax(random_tensor({N, S}, seed, -2.0f, 2.0f));
}

TEST(Pointer, ForwardHandComputed) {
  // V = 3 with logits 0 (uniform 1/3), p_gen = 0.25, source ids [1, 3, 1] (3 = the first OOV),
  // a = [0.5, 0.3, 0.2], Vx = 5: P = [0.25/3, 0.25/3 + 0.75·0.7, 0.25/3, 0.75·0.3, 0].
  Tensor logits = Tensor::zeros({1, 3});
  Tensor p_gen = Tensor::from_vector(std::vector<float>{0.25f}, {1});
  Tensor a = Tensor::from_vector(std::vector<float>{0.5f, 0.3f, 0.2f}, {1, 3});
  const std::vector<float> y = pointer_log_probs(logits, p_gen, a, ids({1, 3, 1}, {1, 3}), 5).to_vector();
  const double third = 0.25 / 3.0;
  const double expected[] = {third, third + 0.75 * 0.7, third, 0.75 * 0.3, 0.0};
  for (int v = 0; v < 5; ++v) {
    const double want = std::log(std::max(expected[v], static_cast<double>(kPointerFloor)));
    EXPECT_NEAR(y[static_cast<size_t>(v)], want, 1e-6) << "v=" << v;
  }
}

TEST(Pointer, MixtureSumsToOne) {
  Tensor logits = random_tensor({4, 7}, 1, -3.0f, 3.0f), p_gen = random_tensor({4}, 2, 0.0f, 1.0f);
  Tensor src = ids({0, 9, 3, 9, 7, 8, 1, 2, 6, 6, 6, 6, 8, 8, 7, 0}, {4, 4});
  const std::vector<float> y = pointer_log_probs(logits, p_gen, random_attention(4, 4, 3), src, 10).to_vector();
  for (int r = 0; r < 4; ++r) {
    double total = 0.0;
    for (int v = 0; v < 10; ++v) total += std::exp(static_cast<double>(y[static_cast<size_t>(r * 10 + v)]));
    EXPECT_NEAR(total, 1.0, 1e-5) << "row " << r;
  }
}

TEST(Pointer, Gradients) {
  for (int64_t S : {1, 5}) {
    Tensor logits = random_tensor({3, 6}, 1).set_requires_grad(true);
    Tensor p_gen = random_tensor({3}, 2, 0.2f, 0.8f).set_requires_grad(true);
    Tensor a = random_tensor({3, S}, 3, 0.1f, 1.0f).set_requires_grad(true);
    std::vector<int32_t> src(static_cast<size_t>(3 * S));
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<int32_t>((i * 5) % 8);  // ids 6, 7 are OOVs
    Tensor src_ids = ids(src, {3, S});
    EXPECT_TRUE(
        gradcheck([&](const std::vector<Tensor>& in) { return pointer_log_probs(in[0], in[1], in[2], src_ids, 8); },
                  {logits, p_gen, a}))
        << "S=" << S;
  }
}

TEST(Pointer, GenerationProbabilityAtZeroAndOneIsFinite) {
  // p_gen = 1: pure generation, the OOV slot has no mass; p_gen = 0: pure copy, words absent
  // from the source have none. Outputs floor at log(kPointerFloor), gradients stay finite.
  for (float gen : {0.0f, 1.0f}) {
    Tensor logits = random_tensor({2, 4}, 5).set_requires_grad(true);
    Tensor p_gen = Tensor::from_vector(std::vector<float>{gen, gen}, {2}).set_requires_grad(true);
    Tensor a = Tensor::from_vector(std::vector<float>{1.0f, 0.0f, 0.4f, 0.6f}, {2, 2}).set_requires_grad(true);
    Tensor y = pointer_log_probs(logits, p_gen, a, ids({4, 1, 1, 4}, {2, 2}), 5);
    for (float v : y.to_vector()) {
      EXPECT_TRUE(std::isfinite(v));
      EXPECT_GE(v, std::log(kPointerFloor) - 1e-3f);
    }
    backward(sum(y));
    for (const Tensor* t : {&logits, &p_gen, &a})
      for (float g : t->grad().to_vector()) EXPECT_TRUE(std::isfinite(g)) << "p_gen=" << gen;
    if (gen == 0.0f) {
      EXPECT_EQ(logits.grad().to_vector(), std::vector<float>(8, 0.0f));  // no vocabulary term
    }
  }
}

TEST(Pointer, ThreadCountDoesNotChangeResults) {
  Tensor logits = random_tensor({37, 50}, 5), p_gen = random_tensor({37}, 6, 0.0f, 1.0f);
  Tensor a = random_attention(37, 9, 7);
  std::vector<int32_t> src(37 * 9);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<int32_t>((i * 7) % 53);
  const int threads = num_threads();
  set_num_threads(1);
  const std::vector<float> one = pointer_log_probs(logits, p_gen, a, ids(src, {37, 9}), 53).to_vector();
  set_num_threads(2);
  EXPECT_EQ(pointer_log_probs(logits, p_gen, a, ids(src, {37, 9}), 53).to_vector(), one);
  set_num_threads(threads);
}

TEST(Pointer, BadInput) {
  Tensor logits = random_tensor({2, 4}, 1), p_gen = random_tensor({2}, 2, 0.0f, 1.0f), a = random_tensor({2, 3}, 3);
  Tensor src = ids({0, 1, 4, 2, 3, 5}, {2, 3});
  EXPECT_THROW_MSG(pointer_log_probs(logits, random_tensor({3}, 4), a, src, 6), ShapeError,
                   "pointer_log_probs: 'p_gen' expected (N=2)");
  EXPECT_THROW_MSG(pointer_log_probs(logits, p_gen, random_tensor({2, 4}, 4), src, 6), ShapeError,
                   "pointer_log_probs: 'src_ids' expected (N=2, S=4)");
  EXPECT_THROW_MSG(pointer_log_probs(logits, p_gen, a, random_tensor({2, 3}, 4), 6), ShapeError,
                   "pointer_log_probs: 'src_ids'");
  EXPECT_THROW_MSG(pointer_log_probs(logits, p_gen, a, src, 3), ValueError,
                   "pointer_log_probs: extended_vocab must be >= V=4, got 3");
  EXPECT_THROW_MSG(pointer_log_probs(logits, p_gen, a, src, 5), ValueError,
                   "pointer_log_probs: 'src_ids' value 5 at index 5 is outside the extended vocabulary [0, Vx=5)");
  EXPECT_THROW_MSG(pointer_log_probs(logits, p_gen, a, ids({0, -1, 0, 0, 0, 0}, {2, 3}), 6), ValueError,
                   "'src_ids' value -1 at index 1");
  EXPECT_THROW_MSG(pointer_log_probs(logits, Tensor::from_vector(std::vector<float>{0.5f, 1.5f}, {2}), a, src, 6),
                   ValueError, "pointer_log_probs: 'p_gen' value 1.5 at index 1 is outside [0, 1]");
  EXPECT_THROW_MSG(pointer_log_probs(logits, Tensor::from_vector(std::vector<float>{NAN, 0.5f}, {2}), a, src, 6),
                   ValueError, "'p_gen' value nan at index 0");
}

}  // namespace
}  // namespace attn
