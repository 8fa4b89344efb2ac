#include "attn/ops/layer_norm.h"

#include <cmath>
#include <limits>

#include "attn/autodiff/tape.h"
#include "attn/parallel.h"
#include "test_support.h"
#include "tolerances.h"

namespace attn {
namespace {
using namespace attn::testing;  // the helpers of tests/support

struct Reference {
  Tensor y, dx, dgamma, dbeta;
};

// Double-precision forward and backward (torch.nn.LayerNorm semantics, biased variance).
Reference reference(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& dy, double eps) {
  const int64_t d = x.shape().last();
  const int64_t rows = x.numel() / d;
  std::vector<float> xv = x.to_vector();
  std::vector<float> gv = gamma.defined() ? gamma.to_vector() : std::vector<float>(d, 1.0f);
  std::vector<float> bv = beta.defined() ? beta.to_vector() : std::vector<float>(d, 0.0f);
  std::vector<float> dyv = dy.defined() ? dy.to_vector() : std::vector<float>(xv.size(), 0.0f);
  std::vector<float> y(xv.size()), dx(xv.size());
  std::vector<double> dg(d, 0.0), db(d, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0.0, var = 0.0;
    for (int64_t j = 0; j < d; ++j) mean += xv[r * d + j];
    mean /= d;
    for (int64_t j = 0; j < d; ++j) var += (xv[r * d + j] - mean) * (xv[r * d + j] - mean);
    var /= d;
    const double rstd = 1.0 / std::sqrt(var + eps);
    double sg = 0.0, sgx = 0.0;
    for (int64_t j = 0; j < d; ++j) {
      const double xhat = (xv[r * d + j] - mean) * rstd;
      y[r * d + j] = static_cast<float>(xhat * gv[j] + bv[j]);
      const double g = static_cast<double>(dyv[r * d + j]) * gv[j];
      sg += g;
      sgx += g * xhat;
      dg[j] += static_cast<double>(dyv[r * d + j]) * xhat;
      db[j] += dyv[r * d + j];
    }
    for (int64_t j = 0; j < d; ++j) {
      const double xhat = (xv[r * d + j] - mean) * rstd;
      const double g = static_cast<double>(dyv[r * d + j]) * gv[j];
      dx[r * d + j] = static_cast<float>(rstd * (g - sg / d - xhat * sgx / d));
    }
  }
  std::vector<float> dgf(dg.begin(), dg.end()), dbf(db.begin(), db.end());
  return {Tensor::from_vector(y, x.shape()), Tensor::from_vector(dx, x.shape()), Tensor::from_vector(dgf, {d}),
          Tensor::from_vector(dbf, {d})};
}

TEST(LayerNorm, ForwardMatchesDoubleReference) {
  Tensor x = random_tensor({2, 3, 8}, 1, -3.0f, 3.0f);
  Tensor gamma = random_tensor({8}, 2, 0.5f, 1.5f);
  Tensor beta = random_tensor({8}, 3);
  EXPECT_TRUE(tensors_close(layer_norm(x, gamma, beta), reference(x, gamma, beta, Tensor(), 1e-5).y, kFusedTol));
  EXPECT_TRUE(tensors_close(layer_norm(x), reference(x, Tensor(), Tensor(), Tensor(), 1e-5).y, kFusedTol));
  EXPECT_TRUE(tensors_close(layer_norm(x, gamma), reference(x, gamma, Tensor(), Tensor(), 1e-5).y, kFusedTol));
  EXPECT_TRUE(tensors_close(layer_norm(x, Tensor(), beta), reference(x, Tensor(), beta, Tensor(), 1e-5).y, kFusedTol));
  EXPECT_TRUE(
      tensors_close(layer_norm(x, gamma, beta, {.eps = 0.5f}), reference(x, gamma, beta, Tensor(), 0.5).y, kFusedTol));
}

TEST(LayerNorm, HandComputedValues) {
  // Row (1, 2, 3, 4): mean 2.5, biased var 1.25; eps = 0 gives (x − 2.5) / √1.25.
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {1, 4});
  const float s = 1.0f / std::sqrt(1.25f);
  EXPECT_TRUE(tensors_close(layer_norm(x, Tensor(), Tensor(), {.eps = 0.0f}),
                            Tensor::from_vector(std::vector<float>{-1.5f * s, -0.5f * s, 0.5f * s, 1.5f * s}, {1, 4}),
                            1e-6f, 1e-6f));
}

TEST(LayerNorm, ConstantRowsAndDOneGiveBeta) {
  // Zero variance: x̂ = 0 (eps keeps it finite), so y = β.
  Tensor gamma = Tensor::from_vector(std::vector<float>{2, 3, 4}, {3});
  Tensor beta = Tensor::from_vector(std::vector<float>{0.5f, -1, 7}, {3});
  Tensor x = Tensor::full({2, 3}, 5.0f);
  EXPECT_EQ(layer_norm(x, gamma, beta).to_vector(), (std::vector<float>{0.5f, -1, 7, 0.5f, -1, 7}));
  Tensor x1 = random_tensor({4, 1}, 4);
  Tensor b1 = Tensor::from_vector(std::vector<float>{0.25f}, {1});
  EXPECT_EQ(layer_norm(x1, Tensor::full({1}, 3.0f), b1).to_vector(), std::vector<float>(4, 0.25f));
}

TEST(LayerNorm, StableForLargeMagnitudes) {
  // 1e3 offset with O(1) spread: the two-pass variance keeps full precision.
  Tensor x = random_tensor({3, 16}, 5, 999.0f, 1001.0f);
  Tensor gamma = random_tensor({16}, 6, 0.5f, 1.5f);
  Tensor beta = random_tensor({16}, 7);
  EXPECT_TRUE(tensors_close(layer_norm(x, gamma, beta), reference(x, gamma, beta, Tensor(), 1e-5).y, kFusedTol));
  Tensor big = random_tensor({2, 8}, 8, -1e3f, 1e3f);
  EXPECT_TRUE(tensors_close(layer_norm(big), reference(big, Tensor(), Tensor(), Tensor(), 1e-5).y, kFusedTol));
}

TEST(LayerNorm, BackwardMatchesDoubleReference) {
  Tensor x = wide_leaf({3, 4, 10}, 9);
  Tensor gamma = wide_leaf({10}, 10, 0.5f, 1.5f);
  Tensor beta = wide_leaf({10}, 11);
  Tensor dy = random_tensor({3, 4, 10}, 12);
  backward(layer_norm(x, gamma, beta), dy);
  Reference ref = reference(x, gamma, beta, dy, 1e-5);
  EXPECT_TRUE(tensors_close(x.grad(), ref.dx, kFusedTol));
  EXPECT_TRUE(tensors_close(gamma.grad(), ref.dgamma, kFusedTol));
  EXPECT_TRUE(tensors_close(beta.grad(), ref.dbeta, kFusedTol));
}

TEST(LayerNorm, ParamGradientsOverManyRowBlocksAreDeterministic) {
  // 300 rows span several fixed row blocks; the result must not depend on the thread count.
  Tensor x = wide_leaf({300, 24}, 13);
  Tensor gamma = wide_leaf({24}, 14, 0.5f, 1.5f);
  Tensor beta = wide_leaf({24}, 15);
  Tensor dy = random_tensor({300, 24}, 16);
  const int saved = num_threads();
  std::vector<std::vector<float>> dx, dg, db;
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    x.drop_grad();
    gamma.drop_grad();
    beta.drop_grad();
    backward(layer_norm(x, gamma, beta), dy);
    dx.push_back(x.grad().to_vector());
    dg.push_back(gamma.grad().to_vector());
    db.push_back(beta.grad().to_vector());
  }
  set_num_threads(saved);
  for (int k : {1, 2}) {
    EXPECT_EQ(dx[0], dx[k]);
    EXPECT_EQ(dg[0], dg[k]);
    EXPECT_EQ(db[0], db[k]);
  }
  Reference ref = reference(x, gamma, beta, dy, 1e-5);
  EXPECT_TRUE(tensors_close(gamma.grad(), ref.dgamma, 1e-4f, 1e-4f));
  EXPECT_TRUE(tensors_close(beta.grad(), ref.dbeta, 1e-4f, 1e-4f));
  EXPECT_TRUE(tensors_close(x.grad(), ref.dx, kFusedTol));
}

TEST(LayerNorm, GradientsAccumulate) {
  Tensor x = wide_leaf({2, 5}, 17);
  Tensor gamma = wide_leaf({5}, 18);
  Tensor dy = random_tensor({2, 5}, 19);
  backward(layer_norm(x, gamma), dy);
  std::vector<float> once = gamma.grad().to_vector();
  backward(layer_norm(x, gamma), dy);
  std::vector<float> twice = gamma.grad().to_vector();
  for (size_t i = 0; i < once.size(); ++i) EXPECT_FLOAT_EQ(twice[i], 2 * once[i]);
}

TEST(LayerNorm, Gradcheck) {
  auto ln = [](LayerNormOptions o = {}) {
    return [o](const std::vector<Tensor>& in) { return layer_norm(in[0], in[1], in[2], o); };
  };
  EXPECT_TRUE(gradcheck(ln(), {wide_leaf({2, 3, 6}, 20), wide_leaf({6}, 21, 0.5f, 1.5f), wide_leaf({6}, 22)}));
  EXPECT_TRUE(gradcheck(ln(), {wide_leaf({1, 5}, 23), wide_leaf({5}, 24), wide_leaf({5}, 25)}));  // one row
  EXPECT_TRUE(gradcheck(ln(), {wide_leaf({4}, 26), wide_leaf({4}, 27), wide_leaf({4}, 28)}));     // rank 1
  EXPECT_TRUE(gradcheck(ln({.eps = 0.1f}), {wide_leaf({3, 1}, 29), wide_leaf({1}, 30), wide_leaf({1}, 31)}));  // D = 1
  // no affine / gamma only / beta only
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return layer_norm(in[0]); }, {wide_leaf({3, 7}, 32)}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return layer_norm(in[0], in[1]); },
                        {wide_leaf({3, 7}, 33), wide_leaf({7}, 34)}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return layer_norm(in[0], Tensor(), in[1]); },
                        {wide_leaf({3, 7}, 35), wide_leaf({7}, 36)}));
  // only the parameters require grad
  Tensor x = random_tensor({130, 3}, 37);  // spans three row blocks
  EXPECT_TRUE(gradcheck(ln(), {x, wide_leaf({3}, 38), wide_leaf({3}, 39)}));
  // large magnitudes (spread ~10 so the finite-difference step is small against it)
  EXPECT_TRUE(gradcheck(ln(), {wide_leaf({2, 5}, 40, 990.0f, 1010.0f), wide_leaf({5}, 41), wide_leaf({5}, 42)}));
}

TEST(LayerNorm, Errors) {
  Tensor x = Tensor::zeros({2, 8});
  EXPECT_THROW_MSG(layer_norm(x, Tensor::zeros({7})), ShapeError, "layer_norm: 'gamma' expected (D=8), got (7)");
  EXPECT_THROW_MSG(layer_norm(x, Tensor::zeros({8}), Tensor::zeros({1, 8})), ShapeError,
                   "layer_norm: 'beta' expected (D=8), got (1, 8)");
  EXPECT_THROW_MSG(layer_norm(x, Tensor::zeros({8}, DType::i32)), ShapeError,
                   "layer_norm: 'gamma' expected dtype float32, got int32");
  EXPECT_THROW_MSG(layer_norm(Tensor::zeros({2, 8}, DType::i32)), ShapeError,
                   "layer_norm: 'x' expected dtype float32, got int32");
  EXPECT_THROW_MSG(layer_norm(Tensor::scalar(1.0f)), ShapeError, "layer_norm: 'x' expected (..., D) with rank >= 1");
  EXPECT_THROW_MSG(layer_norm(Tensor()), ShapeError, "layer_norm: 'x' expected (..., D), got an undefined tensor");
  EXPECT_THROW_MSG(layer_norm(x, Tensor(), Tensor(), {.eps = -1e-5f}), ValueError,
                   "layer_norm: eps must be finite and >= 0, got -1e-05");
  EXPECT_THROW_MSG(layer_norm(x, Tensor(), Tensor(), {.eps = std::numeric_limits<float>::quiet_NaN()}), ValueError,
                   "got nan");
  EXPECT_THROW_MSG(layer_norm(x, Tensor(), Tensor(), {.eps = std::numeric_limits<float>::infinity()}), ValueError,
                   "got inf");
}

}  // namespace
}  // namespace attn
