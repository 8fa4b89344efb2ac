// Monotonic attention (Raffel et al. 2017) and MoChA (Chiu & Raffel 2018) (attn/ops/monotonic.h):
// the expected alignment against the paper's recurrence in double precision (moderate and
// extreme energies, where the plain cumprod form underflows), the expected chunk attention
// against its definition, gradient checks of every input (also through two chained steps), the
// hard online selection, fully masked rows, and the errors.
#include <cmath>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/ops/elementwise.h"
#include "attn/ops/monotonic.h"
#include "attn/ops/reduce.h"
#include "test_support.h"

namespace attn {
namespace {
using namespace attn::testing;  // the helpers of tests/support

constexpr int64_t B = 3, S = 7, D = 4, A = 3;

// A previous alignment: positive, each row summing to at most 1 over its real positions.
Tensor previous(const Tensor& lengths, uint64_t seed) {
  Tensor p = random_tensor({B, S}, seed, 0.05f, 1.0f);
  for (int64_t b = 0; b < B; ++b) {
    double sum = 0.0;
    for (int64_t s = 0; s < S; ++s) sum += p.f32()[b * S + s];
    for (int64_t s = 0; s < S; ++s)
      p.f32()[b * S + s] = s < lengths.i32()[b] ? static_cast<float>(p.f32()[b * S + s] / sum) : 0.0f;
  }
  return p.set_requires_grad(true);
}

// The paper's recurrence (Raffel et al., eq. 9-10): q_j = (1 − p_{j−1}) q_{j−1} + α_{i−1,j}, α_j = p_j q_j.
std::vector<float> recurrence(const Tensor& e, const Tensor& prev, const Tensor& lengths) {
  std::vector<float> out(B * S, 0.0f);
  for (int64_t b = 0; b < B; ++b) {
    double q = 0.0, p_before = 0.0;
    for (int64_t j = 0; j < lengths.i32()[b]; ++j) {
      q = (1.0 - p_before) * q + prev.f32()[b * S + j];
      const double p = 1.0 / (1.0 + std::exp(-static_cast<double>(e.f32()[b * S + j])));
      out[b * S + j] = static_cast<float>(p * q);
      p_before = p;
    }
  }
  return out;
}

TEST(MonotonicAlignment, EqualsThePapersRecurrence) {
  const Tensor len = lengths_of({7, 4, 1});
  const Tensor e = random_tensor({B, S}, 1, -3.0f, 3.0f), prev = previous(len, 2);
  EXPECT_TRUE(tensors_close(monotonic_alignment(e, prev, len), Tensor::from_vector(recurrence(e, prev, len), {B, S})));
  autodiff::tape().clear();
}

// p ≈ 1 at every position: the exclusive cumprod of 1 − p falls below 1e-150 by position 3 (and
// underflows float32 at once), yet the mass the previous step left late in the row must still
// stop right there. The plain form cumsum(prev / cumprod) would divide by zero; the clamped
// one (cumprod >= ε) would let that mass through to every later position.
TEST(MonotonicAlignment, ExtremeEnergiesMatchTheRecurrenceWithoutNaN) {
  const Tensor len = lengths_of({7, 7, 5});
  for (float energy : {60.0f, -60.0f, 90.0f}) {
    SCOPED_TRACE(energy);
    const Tensor e = Tensor::full({B, S}, energy);
    Tensor prev = Tensor::zeros({B, S});
    prev.f32()[0 * S + 5] = 1.0f;  // all the mass late in the row
    prev.f32()[1 * S + 0] = 0.5f;
    prev.f32()[1 * S + 6] = 0.5f;
    prev.f32()[2 * S + 4] = 1.0f;
    prev.set_requires_grad(true);
    const Tensor alpha = monotonic_alignment(e, prev, len);
    EXPECT_TRUE(tensors_close(alpha, Tensor::from_vector(recurrence(e, prev, len), {B, S}), 1e-6f, 1e-5f));
    backward(sum(alpha));
    for (float g : prev.grad().to_vector()) EXPECT_TRUE(std::isfinite(g));
    autodiff::tape().clear();
  }
}

TEST(MonotonicAlignment, GradcheckEnergiesAndPrevious) {
  const Tensor len = lengths_of({7, 3, 1});
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& x) { return monotonic_alignment(x[0], x[1], len); },
                        {leaf({B, S}, 3, -2.0f, 2.0f), previous(len, 4)}));
}

// Two decoder steps, the second fed the first's alignment: the gradient flows back through it.
TEST(MonotonicAlignment, GradcheckThroughTwoChainedSteps) {
  const Tensor len = lengths_of({7, 5, 2});
  Tensor delta = Tensor::zeros({B, S});
  for (int64_t b = 0; b < B; ++b) delta.f32()[b * S] = 1.0f;
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Tensor>& x) {
        return monotonic_alignment(x[1], monotonic_alignment(x[0], delta, len), len);
      },
      {leaf({B, S}, 5, -2.0f, 2.0f), leaf({B, S}, 6, -2.0f, 2.0f)}));
}

// β_k = Σ_{j=k}^{k+W−1} α_j exp(u_k) / Σ_{l=j−W+1}^{j} exp(u_l), straight from the definition.
std::vector<float> chunk_reference(const Tensor& alpha, const Tensor& u, const Tensor& lengths, int64_t W) {
  std::vector<float> out(B * S, 0.0f);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t L = lengths.i32()[b];
    for (int64_t k = 0; k < L; ++k) {
      double sum = 0.0;
      for (int64_t j = k; j < std::min(L, k + W); ++j) {
        double norm = 0.0;
        for (int64_t l = std::max<int64_t>(0, j - W + 1); l <= j; ++l) norm += std::exp(double(u.f32()[b * S + l]));
        sum += alpha.f32()[b * S + j] * std::exp(double(u.f32()[b * S + k])) / norm;
      }
      out[b * S + k] = static_cast<float>(sum);
    }
  }
  return out;
}

TEST(MochaChunkAttention, MatchesTheDefinitionAndKeepsTheMass) {
  const Tensor len = lengths_of({7, 4, 1});
  const Tensor alpha = previous(len, 7), u = random_tensor({B, S}, 8, -3.0f, 3.0f);
  for (int64_t W : {1, 2, 3, 9}) {
    SCOPED_TRACE(W);
    const Tensor beta = mocha_chunk_attention(alpha, u, len, W);
    EXPECT_TRUE(tensors_close(beta, Tensor::from_vector(chunk_reference(alpha, u, len, W), {B, S})));
    for (int64_t b = 0; b < B; ++b) {
      double a = 0.0, c = 0.0;
      for (int64_t s = 0; s < S; ++s) a += alpha.f32()[b * S + s], c += beta.f32()[b * S + s];
      EXPECT_NEAR(a, c, 1e-5);
    }
    if (W == 1) EXPECT_TRUE(tensors_close(beta, alpha));  // a chunk of one is the stop itself
  }
  autodiff::tape().clear();
}

TEST(MochaChunkAttention, GradcheckAlphaAndChunkEnergies) {
  const Tensor len = lengths_of({7, 3, 1});
  for (int64_t W : {1, 2, 4}) {
    EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& x) { return mocha_chunk_attention(x[0], x[1], len, W); },
                          {previous(len, 9), leaf({B, S}, 10, -2.0f, 2.0f)}))
        << "W=" << W;
  }
}

TEST(AdditiveEnergy, MatchesTheScoreWithOffsetAndGradchecks) {
  const Tensor len = lengths_of({7, 3, 1});
  const Tensor q = leaf({B, D}, 11), k = leaf({B, S, A}, 12), w_q = leaf({A, D}, 13), bias = leaf({A}, 14),
               v = leaf({A}, 15), r = leaf({1}, 16);
  const Tensor e = additive_energy(q, k, w_q, bias, v, r, len);
  std::vector<float> want(B * S, 0.0f);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < len.i32()[b]; ++s) {
      double x = r.f32()[0];
      for (int64_t a = 0; a < A; ++a) {
        double h = bias.f32()[a] + k.f32()[(b * S + s) * A + a];
        for (int64_t d = 0; d < D; ++d) h += double(w_q.f32()[a * D + d]) * q.f32()[b * D + d];
        x += v.f32()[a] * std::tanh(h);
      }
      want[b * S + s] = static_cast<float>(x);
    }
  EXPECT_TRUE(tensors_close(e, Tensor::from_vector(want, {B, S})));
  autodiff::tape().clear();
  EXPECT_TRUE(
      gradcheck([&](const std::vector<Tensor>& x) { return additive_energy(x[0], x[1], x[2], x[3], x[4], x[5], len); },
                {q, k, w_q, bias, v, r}));
}

TEST(MonotonicSelect, StopsAtTheFirstPositiveEnergyFromTheStart) {
  const Tensor len = lengths_of({7, 4, 3});
  Tensor e = Tensor::full({B, S}, -1.0f);
  e.f32()[0 * S + 1] = 0.5f;  // before row 0's start: not read again
  e.f32()[0 * S + 4] = 0.5f;
  e.f32()[1 * S + 2] = 2.0f;
  e.f32()[2 * S + 5] = 3.0f;  // past row 2's length: never read
  const Tensor selected = monotonic_select(e, len, Tensor::from_vector(std::vector<int32_t>{2, 2, 0}, {B}));
  EXPECT_EQ(selected.to_vector_i32(), (std::vector<int32_t>{4, 2, -1}));
  // Monotonic (W = 1): one-hot at the stop; MoChA: softmax over the W frames ending there.
  const Tensor one_hot = monotonic_hard_weights(selected, e, 1);
  std::vector<float> want(B * S, 0.0f);
  want[0 * S + 4] = 1.0f;
  want[1 * S + 2] = 1.0f;
  EXPECT_TRUE(tensors_close(one_hot, Tensor::from_vector(want, {B, S}), 0.0f, 0.0f));
  const Tensor u = random_tensor({B, S}, 17, -2.0f, 2.0f);
  const Tensor chunk = monotonic_hard_weights(selected, u, 2);
  const auto soft = [&](int64_t b, int64_t s, int64_t other) {
    return std::exp(u.f32()[b * S + s]) / (std::exp(u.f32()[b * S + s]) + std::exp(u.f32()[b * S + other]));
  };
  std::fill(want.begin(), want.end(), 0.0f);
  want[0 * S + 3] = soft(0, 3, 4);
  want[0 * S + 4] = soft(0, 4, 3);
  want[1 * S + 1] = soft(1, 1, 2);
  want[1 * S + 2] = soft(1, 2, 1);
  EXPECT_TRUE(tensors_close(chunk, Tensor::from_vector(want, {B, S})));
  // A chunk reaching before the first frame is cut there.
  const Tensor first = monotonic_hard_weights(Tensor::from_vector(std::vector<int32_t>{0, 0, 0}, {B}), u, 3);
  for (int64_t b = 0; b < B; ++b) EXPECT_FLOAT_EQ(first.f32()[b * S], 1.0f);
}

// A row of length 0: zero alignment and chunk attention, zero gradients, never NaN.
TEST(MonotonicAlignment, FullyMaskedRowGivesZerosAndZeroGradient) {
  const Tensor len = lengths_of({5, 0, 2});
  const Tensor e = leaf({B, S}, 18), prev = previous(lengths_of({5, 7, 2}), 19), u = leaf({B, S}, 20);
  const Tensor alpha = monotonic_alignment(e, prev, len);
  const Tensor beta = mocha_chunk_attention(alpha, u, len, 3);
  backward(add(sum(alpha), sum(beta)));
  for (int64_t s = 0; s < S; ++s) {
    EXPECT_EQ(alpha.f32()[S + s], 0.0f);
    EXPECT_EQ(beta.f32()[S + s], 0.0f);
    EXPECT_EQ(e.grad().f32()[S + s], 0.0f);
    EXPECT_EQ(prev.grad().f32()[S + s], 0.0f);
    EXPECT_EQ(u.grad().f32()[S + s], 0.0f);
  }
  for (const Tensor& t : {e, prev, u})
    for (float g : t.grad().to_vector()) EXPECT_TRUE(std::isfinite(g));
  autodiff::tape().clear();
}

TEST(MonotonicAttention, Errors) {
  const Tensor len = lengths_of({7, 4, 1});
  const Tensor e = random_tensor({B, S}, 21);
  EXPECT_THROW_MSG(monotonic_alignment(e, random_tensor({B, S + 1}, 22), len), ShapeError,
                   "monotonic_alignment: 'prev'");
  EXPECT_THROW_MSG(monotonic_alignment(e, e, lengths_of({7, 8, 1})), ValueError, "'lengths' value 8 at batch index 1");
  EXPECT_THROW_MSG(mocha_chunk_attention(e, e, len, 0), ValueError,
                   "mocha_chunk_attention: the chunk width W must be >= 1, got 0");
  EXPECT_THROW_MSG(monotonic_select(e, len, Tensor::from_vector(std::vector<int32_t>{0, -1, 0}, {B})), ValueError,
                   "monotonic_select: 'start' value -1 at batch index 1 is negative");
  EXPECT_THROW_MSG(monotonic_hard_weights(Tensor::from_vector(std::vector<int32_t>{0, 7, 0}, {B}), e, 1), ValueError,
                   "monotonic_hard_weights: 'selected' value 7 at batch index 1 is outside [-1, S=7)");
  EXPECT_THROW_MSG(additive_energy(random_tensor({B, D}, 1), random_tensor({B, S, A}, 2), random_tensor({A, D}, 3),
                                   random_tensor({A}, 4), random_tensor({A}, 5), random_tensor({2}, 6), len),
                   ShapeError, "additive_energy: 'r'");
}

}  // namespace
}  // namespace attn
