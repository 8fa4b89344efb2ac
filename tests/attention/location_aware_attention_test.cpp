// Chorowski et al.'s location-aware attention (attn/ops/attention.h): the convolution of the
// previous alignment against a direct double-precision loop, the whole step against a
// reference from the paper's equations (with sharpening and smoothing), gradient checks of
// every input (the previous alignment included, and through two chained steps), masked and
// fully masked rows, and the errors.
#include <cmath>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/ops/attention.h"
#include "attn/ops/elementwise.h"
#include "attn/ops/reduce.h"
#include "test_support.h"

namespace attn {
namespace {
using namespace attn::testing;  // the helpers of tests/support

constexpr int64_t B = 3, S = 6, D = 4, E = 5, A = 3, K = 2;

// f[b, s, k] = Σ_j F[k, j] prev[b, s + j − r/2], straight from the definition.
std::vector<double> features_reference(const Tensor& prev, const Tensor& filters) {
  const int64_t Bn = prev.dim(0), Sn = prev.dim(1), Kn = filters.dim(0), r = filters.dim(1);
  std::vector<double> f(Bn * Sn * Kn, 0.0);
  for (int64_t b = 0; b < Bn; ++b)
    for (int64_t s = 0; s < Sn; ++s)
      for (int64_t k = 0; k < Kn; ++k)
        for (int64_t j = 0; j < r; ++j) {
          const int64_t i = s + j - r / 2;
          if (i >= 0 && i < Sn) f[(b * Sn + s) * Kn + k] += double(filters.f32()[k * r + j]) * prev.f32()[b * Sn + i];
        }
  return f;
}

struct Inputs {
  Tensor query, keys, values, prev, w_q, bias, v, filters, w_loc, lengths;
  std::vector<Tensor> leaves() const { return {query, keys, values, prev, w_q, bias, v, filters, w_loc}; }
};

Inputs make_inputs(int64_t r, std::vector<int32_t> lengths, uint64_t seed) {
  Inputs in{leaf({B, D}, seed),     leaf({B, S, A}, seed + 1), leaf({B, S, E}, seed + 2), leaf({B, S}, seed + 3),
            leaf({A, D}, seed + 4), leaf({A}, seed + 5),       leaf({A}, seed + 6),       leaf({K, r}, seed + 7),
            leaf({A, K}, seed + 8), lengths_of(lengths)};
  return in;
}

// A loss over both outputs.
Tensor add_all(const AttentionResult& r) { return add(sum(r.context), sum(r.weights)); }

AttentionResult run(const std::vector<Tensor>& x, const Tensor& lengths, const LocationAwareOptions& o = {}) {
  return location_aware_attention(x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], x[8], lengths, o);
}

// e_s = vᵀ tanh(W q + k̃_s + U f_s + b); a = softmax(β e) or σ(β e)/Σσ(β e) over s < L; c = Σ a values.
void check_against_reference(const Inputs& in, const LocationAwareOptions& o) {
  const AttentionResult r = run(in.leaves(), in.lengths, o);
  const std::vector<double> f = features_reference(in.prev, in.filters);
  std::vector<float> want_w(B * S, 0.0f), want_c(B * E, 0.0f);
  auto at = [](const Tensor& t, int64_t i) { return static_cast<double>(t.f32()[i]); };
  for (int64_t b = 0; b < B; ++b) {
    const int64_t L = in.lengths.i32()[b];
    std::vector<double> e(S), p(S);
    double norm = 0.0, max = -1e300;
    for (int64_t s = 0; s < L; ++s) {
      e[s] = 0.0;
      for (int64_t a = 0; a < A; ++a) {
        double x = at(in.bias, a) + at(in.keys, (b * S + s) * A + a);
        for (int64_t d = 0; d < D; ++d) x += at(in.w_q, a * D + d) * at(in.query, b * D + d);
        for (int64_t k = 0; k < K; ++k) x += at(in.w_loc, a * K + k) * f[(b * S + s) * K + k];
        e[s] += at(in.v, a) * std::tanh(x);
      }
      e[s] *= o.sharpening;
      max = std::max(max, e[s]);
    }
    for (int64_t s = 0; s < L; ++s) norm += p[s] = o.smoothing ? 1.0 / (1.0 + std::exp(-e[s])) : std::exp(e[s] - max);
    for (int64_t s = 0; s < L; ++s) {
      want_w[b * S + s] = static_cast<float>(p[s] / norm);
      for (int64_t j = 0; j < E; ++j)
        want_c[b * E + j] += static_cast<float>(p[s] / norm * at(in.values, (b * S + s) * E + j));
    }
  }
  EXPECT_TRUE(tensors_close(r.weights, Tensor::from_vector(want_w, {B, S}), 2e-5f, 1e-4f));
  EXPECT_TRUE(tensors_close(r.context, Tensor::from_vector(want_c, {B, E}), 2e-5f, 1e-4f));
}

TEST(LocationAwareAttention, FeaturesAreTheCentredZeroPaddedConvolution) {
  for (int64_t r : {1, 3, 5, 13}) {  // 13 > 2·S: every window reaches past both ends
    SCOPED_TRACE(r);
    const Tensor prev = random_tensor({B, S}, 1), filters = random_tensor({K, r}, 2);
    const Tensor f = location_aware_features(prev, filters);
    ASSERT_EQ(f.shape(), Shape({B, S, K}));
    const std::vector<double> want = features_reference(prev, filters);
    EXPECT_TRUE(tensors_close(f, Tensor::from_vector(std::vector<float>(want.begin(), want.end()), {B, S, K})));
  }
}

TEST(LocationAwareAttention, MatchesThePapersEquations) {
  const Inputs in = make_inputs(3, {6, 4, 1}, 10);
  check_against_reference(in, {});
  check_against_reference(in, {.sharpening = 2.5f});
  check_against_reference(in, {.smoothing = true});
  check_against_reference(in, {.sharpening = 0.5f, .smoothing = true});
  autodiff::tape().clear();
}

TEST(LocationAwareAttention, GradcheckEveryInput) {
  for (const LocationAwareOptions o :
       {LocationAwareOptions{}, LocationAwareOptions{.sharpening = 2.0f}, LocationAwareOptions{.smoothing = true}}) {
    SCOPED_TRACE(o.smoothing ? "smoothing" : o.sharpening != 1.0f ? "sharpening" : "softmax");
    for (int64_t r : {1, 5}) {
      const Inputs in = make_inputs(r, {6, 3, 1}, 20 + static_cast<uint64_t>(r));
      for (bool weights : {false, true})
        EXPECT_TRUE(gradcheck(
            [&](const std::vector<Tensor>& x) {
              return weights ? run(x, in.lengths, o).weights : run(x, in.lengths, o).context;
            },
            in.leaves()))
            << "r=" << r << (weights ? " weights" : " context");
    }
  }
}

// Two decoder steps, the second fed the first's weights: the gradient flows back through the
// alignment the first step produced.
TEST(LocationAwareAttention, GradcheckThroughTwoChainedSteps) {
  const Inputs in = make_inputs(3, {6, 5, 2}, 40);
  const Tensor query2 = leaf({B, D}, 50);
  std::vector<Tensor> inputs = in.leaves();
  inputs.push_back(query2);
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Tensor>& x) {
        const AttentionResult first = run(x, in.lengths);
        std::vector<Tensor> second = x;
        second[0] = x[9];
        second[3] = first.weights;
        return run(second, in.lengths).context;
      },
      inputs));
}

// A row of length 0: zero weights, zero context, zero gradients, never NaN (softmax and smoothing).
TEST(LocationAwareAttention, FullyMaskedRowGivesZerosAndZeroGradient) {
  for (bool smoothing : {false, true}) {
    const Inputs in = make_inputs(3, {4, 0, 2}, 60);
    const AttentionResult r = run(in.leaves(), in.lengths, {.smoothing = smoothing});
    for (int64_t s = 0; s < S; ++s) EXPECT_EQ(r.weights.f32()[1 * S + s], 0.0f);
    for (int64_t j = 0; j < E; ++j) EXPECT_EQ(r.context.f32()[1 * E + j], 0.0f);
    for (float w : r.weights.to_vector()) EXPECT_TRUE(std::isfinite(w));
    backward(add_all(r));
    for (int64_t d = 0; d < D; ++d) EXPECT_EQ(in.query.grad().f32()[1 * D + d], 0.0f);
    for (int64_t s = 0; s < S; ++s) EXPECT_EQ(in.prev.grad().f32()[1 * S + s], 0.0f);
    for (const Tensor& t : in.leaves())
      for (float g : t.grad().to_vector()) EXPECT_TRUE(std::isfinite(g));
    autodiff::tape().clear();
  }
}

TEST(LocationAwareAttention, Errors) {
  const Inputs in = make_inputs(3, {6, 4, 1}, 70);
  std::vector<Tensor> x = in.leaves();
  EXPECT_THROW_MSG(location_aware_features(in.prev, random_tensor({K, 4}, 1)), ValueError,
                   "location_aware_features: the filter width r=4 must be odd");
  EXPECT_THROW_MSG(run(x, in.lengths, {.sharpening = 0.0f}), ValueError,
                   "location_aware_attention: sharpening β must be finite and > 0, got 0");
  x[3] = random_tensor({B, S + 1}, 2);
  EXPECT_THROW_MSG(run(x, in.lengths), ShapeError, "location_aware_attention: 'prev_weights'");
  x = in.leaves();
  x[8] = random_tensor({A, K + 1}, 3);
  EXPECT_THROW_MSG(run(x, in.lengths), ShapeError, "location_aware_attention: 'w_loc'");
  EXPECT_THROW_MSG(run(in.leaves(), lengths_of({6, 7, 1})), ValueError, "'lengths' value 7 at batch index 1");
  autodiff::tape().clear();
}

}  // namespace
}  // namespace attn
