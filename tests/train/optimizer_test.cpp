#include "attn/train/optimizer.h"

#include <cmath>

#include "attn/parallel.h"
#include "op_table.h"
#include "test_support.h"
#include "tolerances.h"

namespace attn::train {
namespace {
using testing::kRowTol;  // float32 arithmetic against the double reference

// Parameter start values and the gradients of three steps (a zero, a tiny and a large
// gradient included).
const std::vector<double> kStart = {0.5, -1.5, 2.0, 0.0, 1e-3};
const std::vector<std::vector<double>> kGrads = {
    {0.1, -0.2, 0.3, 0.0, 4.0},
    {-0.5, 0.25, 0.3, 1e-4, -3.0},
    {0.05, 0.0, -0.7, 2.0, 0.5},
};

Tensor make_param() {
  std::vector<float> v(kStart.begin(), kStart.end());
  return Tensor::from_vector(v, {5}).set_requires_grad(true).set_name("p");
}

void set_grad(Tensor& p, const std::vector<double>& g) {
  std::vector<float> v(g.begin(), g.end());
  p.grad_accumulator().copy_from(Tensor::from_vector(v, {5}));
}

Tensor as_tensor(const std::vector<double>& v) {
  std::vector<float> f(v.begin(), v.end());
  return Tensor::from_vector(f, {static_cast<int64_t>(f.size())});
}

// torch.optim.SGD, written out in double:
//   d = g + wd·p;  buf = d (first step) or momentum·buf + (1 − dampening)·d
//   d = d + momentum·buf (nesterov) or buf;  p = p − lr·d
std::vector<double> sgd_reference(const SGDOptions& o, int steps) {
  std::vector<double> p = kStart, buf(p.size(), 0.0);
  for (int t = 1; t <= steps; ++t)
    for (size_t i = 0; i < p.size(); ++i) {
      double d = kGrads[t - 1][i] + o.weight_decay * p[i];
      if (o.momentum != 0.0f) {
        buf[i] = t == 1 ? d : o.momentum * buf[i] + (1.0 - o.dampening) * d;
        d = o.nesterov ? d + o.momentum * buf[i] : buf[i];
      }
      p[i] -= static_cast<double>(o.lr) * d;
    }
  return p;
}

// torch.optim.Adam / AdamW in textbook form (double):
//   AdamW: p = p·(1 − lr·wd);  Adam: d = g + wd·p
//   m = β1·m + (1 − β1)·d;  v = β2·v + (1 − β2)·d²
//   p = p − lr · (m / (1 − β1^t)) / (√(v / (1 − β2^t)) + eps)
std::vector<double> adam_reference(const AdamOptions& o, bool decoupled, int steps) {
  std::vector<double> p = kStart, m(p.size(), 0.0), v(p.size(), 0.0);
  const double lr = o.lr, b1 = o.beta1, b2 = o.beta2, eps = o.eps, wd = o.weight_decay;
  for (int t = 1; t <= steps; ++t)
    for (size_t i = 0; i < p.size(); ++i) {
      if (decoupled) p[i] *= 1.0 - lr * wd;
      const double d = kGrads[t - 1][i] + (decoupled ? 0.0 : wd * p[i]);
      m[i] = b1 * m[i] + (1.0 - b1) * d;
      v[i] = b2 * v[i] + (1.0 - b2) * d * d;
      const double m_hat = m[i] / (1.0 - std::pow(b1, t));
      const double v_hat = v[i] / (1.0 - std::pow(b2, t));
      p[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  return p;
}

template <class Opt, class Options>
void run_steps(Tensor& p, const Options& options, int steps) {
  Opt opt({p}, options);
  for (int t = 0; t < steps; ++t) {
    set_grad(p, kGrads[t]);
    opt.step();
    opt.zero_grad();
  }
  EXPECT_EQ(opt.step_count(), steps);
}

TEST(Optimizer, SgdMatchesTorchEquations) {
  const std::vector<SGDOptions> cases = {
      {.lr = 0.1f},
      {.lr = 0.1f, .weight_decay = 0.01f},
      {.lr = 0.05f, .momentum = 0.9f},
      {.lr = 0.05f, .momentum = 0.9f, .dampening = 0.3f, .weight_decay = 0.1f},
      {.lr = 0.05f, .momentum = 0.8f, .weight_decay = 0.02f, .nesterov = true},
  };
  for (size_t c = 0; c < cases.size(); ++c) {
    Tensor p = make_param();
    run_steps<SGD>(p, cases[c], 3);
    EXPECT_TRUE(testing::tensors_close(p, as_tensor(sgd_reference(cases[c], 3)), kRowTol)) << "case " << c;
  }
}

TEST(Optimizer, SgdMomentumHandValues) {
  // p = 1, g = 0.5, lr 0.1, momentum 0.9: buf = 0.5, p = 0.95; buf = 0.95, p = 0.855.
  Tensor p = Tensor::from_vector(std::vector<float>{1.0f}, {1}).set_requires_grad(true);
  SGD opt({p}, {.lr = 0.1f, .momentum = 0.9f});
  for (int t = 0; t < 2; ++t) {
    p.grad_accumulator().fill(0.5f);
    opt.step();
    opt.zero_grad();
  }
  EXPECT_NEAR(p.item(), 0.855f, 1e-6f);
}

TEST(Optimizer, AdamMatchesTorchEquations) {
  const std::vector<AdamOptions> cases = {
      {.lr = 0.01f},
      {.lr = 0.01f, .beta1 = 0.8f, .beta2 = 0.95f, .eps = 1e-3f},
      {.lr = 0.02f, .weight_decay = 0.1f},
  };
  for (size_t c = 0; c < cases.size(); ++c) {
    Tensor p = make_param();
    run_steps<Adam>(p, cases[c], 3);
    EXPECT_TRUE(testing::tensors_close(p, as_tensor(adam_reference(cases[c], false, 3)), kRowTol)) << "case " << c;
  }
}

TEST(Optimizer, AdamWMatchesTorchEquations) {
  const std::vector<AdamWOptions> cases = {
      {.lr = 0.01f},  // default weight_decay 1e-2
      {.lr = 0.1f, .beta1 = 0.5f, .weight_decay = 0.5f},
      {.lr = 0.01f, .weight_decay = 0.0f},
  };
  for (size_t c = 0; c < cases.size(); ++c) {
    Tensor p = make_param();
    run_steps<AdamW>(p, cases[c], 3);
    const AdamOptions as_adam{cases[c].lr, cases[c].beta1, cases[c].beta2, cases[c].eps, cases[c].weight_decay};
    EXPECT_TRUE(testing::tensors_close(p, as_tensor(adam_reference(as_adam, true, 3)), kRowTol)) << "case " << c;
  }
  // AdamW decays a parameter with a zero gradient; Adam without weight decay leaves it.
  Tensor p = make_param();
  AdamW opt({p}, {.lr = 0.1f, .weight_decay = 0.5f});
  p.grad_accumulator().fill(0.0f);
  opt.step();
  EXPECT_NEAR(p.to_vector()[2], 2.0f * (1.0f - 0.05f), 1e-6f);
}

TEST(Optimizer, AdamFirstStepMovesByLr) {
  // With bias correction the first Adam step is lr · g / (|g| + eps') ≈ lr · sign(g).
  Tensor p = make_param();
  Adam opt({p}, {.lr = 0.1f});
  set_grad(p, {1.0, -2.0, 0.5, 3.0, -0.25});
  opt.step();
  const std::vector<float> v = p.to_vector();
  EXPECT_NEAR(v[0], 0.4f, 1e-6f);
  EXPECT_NEAR(v[1], -1.4f, 1e-6f);
  EXPECT_NEAR(v[2], 1.9f, 1e-6f);
  EXPECT_NEAR(v[3], -0.1f, 1e-6f);
  EXPECT_NEAR(v[4], 0.101f, 1e-6f);
}

TEST(Optimizer, ParametersWithoutGradAreSkipped) {
  // Parameter b gets gradients at steps 1 and 3 only: its own step count (bias
  // correction) is 1 then 2, as in PyTorch when .grad is None.
  Tensor a = make_param(), b = make_param();
  Adam opt({a, b}, {.lr = 0.01f});
  for (int t = 0; t < 3; ++t) {
    set_grad(a, kGrads[t]);
    if (t != 1) set_grad(b, kGrads[t == 0 ? 0 : 1]);
    opt.step();
    opt.zero_grad();
  }
  EXPECT_TRUE(testing::tensors_close(a, as_tensor(adam_reference({.lr = 0.01f}, false, 3)), kRowTol));
  EXPECT_TRUE(testing::tensors_close(b, as_tensor(adam_reference({.lr = 0.01f}, false, 2)), kRowTol));
  // zero_grad(false) keeps zeroed buffers: then the parameter IS updated (momentum decays).
  Tensor c = make_param();
  SGD sgd({c}, {.lr = 0.1f, .momentum = 0.5f});
  set_grad(c, kGrads[0]);
  sgd.step();
  sgd.zero_grad(false);
  const std::vector<float> before = c.to_vector();
  sgd.step();
  EXPECT_NE(c.to_vector(), before);
  sgd.zero_grad();
  const std::vector<float> after = c.to_vector();
  sgd.step();
  EXPECT_EQ(c.to_vector(), after);
}

TEST(Optimizer, LearningRateCanChange) {
  Tensor p = make_param();
  SGD opt({p}, {.lr = 0.1f});
  EXPECT_FLOAT_EQ(opt.lr(), 0.1f);
  opt.set_lr(0.5f);
  EXPECT_FLOAT_EQ(opt.lr(), 0.5f);
  set_grad(p, {1, 1, 1, 1, 1});
  opt.step();
  EXPECT_NEAR(p.to_vector()[0], 0.0f, 1e-7f);
  EXPECT_THROW_MSG(opt.set_lr(-1.0f), ValueError, "SGD: invalid learning rate -1");
  EXPECT_THROW_MSG(opt.set_lr(NAN), ValueError, "SGD: invalid learning rate nan");
}

// Resuming from exported state continues exactly as the uninterrupted optimizer.
template <class Opt, class Options>
void check_resume(const Options& options) {
  Tensor a = make_param();
  Opt first({a}, options);
  for (int t = 0; t < 2; ++t) {
    set_grad(a, kGrads[t]);
    first.step();
    first.zero_grad();
  }
  const OptimizerState state = first.state();
  EXPECT_EQ(state.step, 2);
  Tensor b = a.clone().set_requires_grad(true);
  Opt second({b}, options);
  second.load_state(state);
  EXPECT_EQ(second.step_count(), 2);
  set_grad(a, kGrads[2]);
  set_grad(b, kGrads[2]);
  first.step();
  second.step();
  EXPECT_EQ(a.to_vector(), b.to_vector());
}

TEST(Optimizer, StateExportImportResumesExactly) {
  check_resume<Adam>(AdamOptions{.lr = 0.01f, .weight_decay = 0.1f});
  check_resume<AdamW>(AdamWOptions{.lr = 0.01f});
  check_resume<SGD>(SGDOptions{.lr = 0.1f, .momentum = 0.9f, .nesterov = true});
  // Names and contents.
  Tensor p = make_param();
  Tensor unused = make_param();
  Adam opt({unused, p});
  set_grad(p, kGrads[0]);
  opt.step();
  const OptimizerState s = opt.state();
  ASSERT_EQ(s.tensors.size(), 3u);  // parameter 0 never had a gradient: no state
  EXPECT_EQ(s.tensors[0].first, "optimizer.1.step");
  EXPECT_EQ(s.tensors[0].second.to_vector_i32(), std::vector<int32_t>{1});
  EXPECT_EQ(s.tensors[1].first, "optimizer.1.exp_avg");
  EXPECT_EQ(s.tensors[2].first, "optimizer.1.exp_avg_sq");
  EXPECT_NEAR(s.tensors[1].second.to_vector()[4], 0.1f * 4.0f, 1e-6f);
  EXPECT_TRUE(SGD({p}).state().tensors.empty());
}

TEST(Optimizer, LoadStateChecksEverythingFirst) {
  Tensor p = make_param();
  Adam opt({p});
  set_grad(p, kGrads[0]);
  opt.step();
  const OptimizerState good = opt.state();
  auto with = [&](size_t k, std::string name, Tensor t) {
    OptimizerState s = good;
    s.tensors[k] = {std::move(name), std::move(t)};
    return s;
  };
  Tensor q = make_param();
  Adam fresh({q});
  EXPECT_THROW_MSG(fresh.load_state(with(1, "optimizer.0.exp_avg", Tensor::zeros({4}))), ValueError,
                   "Adam: load_state: entry 'optimizer.0.exp_avg' expected float32 (5) (the shape of parameter #0 "
                   "'p'), got float32 (4)");
  EXPECT_THROW_MSG(fresh.load_state(with(1, "optimizer.0.momentum_buffer", Tensor::zeros({5}))), ValueError,
                   "unexpected entry 'optimizer.0.momentum_buffer' (Adam keeps no 'momentum_buffer')");
  EXPECT_THROW_MSG(fresh.load_state(with(1, "optimizer.3.exp_avg", Tensor::zeros({5}))), ValueError,
                   "refers to parameter 3, but the optimizer has 1");
  EXPECT_THROW_MSG(fresh.load_state(with(1, "model.w", Tensor::zeros({5}))), ValueError,
                   "unexpected entry 'model.w' (expected optimizer.<index>.<slot>)");
  EXPECT_THROW_MSG(fresh.load_state(with(0, "optimizer.0.step", Tensor::zeros({1}))), ValueError,
                   "entry 'optimizer.0.step' expected int32 (1), got float32 (1)");
  OptimizerState missing = good;
  missing.tensors.pop_back();
  EXPECT_THROW_MSG(fresh.load_state(missing), ValueError, "entry 'optimizer.0.exp_avg_sq' is missing");
  OptimizerState negative = good;
  negative.step = -1;
  EXPECT_THROW_MSG(fresh.load_state(negative), ValueError, "step count -1 is negative");
  // Nothing changed: the fresh optimizer still behaves as new.
  EXPECT_EQ(fresh.step_count(), 0);
  EXPECT_TRUE(fresh.state().tensors.empty());
}

TEST(Optimizer, ConstructionErrors) {
  Tensor p = make_param();
  EXPECT_THROW_MSG(SGD({}), ValueError, "SGD: got an empty parameter list");
  EXPECT_THROW_MSG(SGD({p, p}), ValueError, "SGD: parameter #1 'p' appears more than once");
  EXPECT_THROW_MSG(SGD({Tensor()}), ValueError, "SGD: parameter 0 is undefined");
  EXPECT_THROW_MSG(Adam({Tensor::zeros({2}, DType::i32)}), ValueError, "Adam: parameter #0 must be float32, got int32");
  EXPECT_THROW_MSG(SGD({p}, {.lr = -0.1f}), ValueError, "SGD: invalid learning rate -0.1");
  EXPECT_THROW_MSG(SGD({p}, {.momentum = -0.5f}), ValueError, "SGD: invalid momentum -0.5");
  EXPECT_THROW_MSG(SGD({p}, {.nesterov = true}), ValueError,
                   "nesterov momentum requires momentum > 0 and dampening = 0");
  EXPECT_THROW_MSG(SGD({p}, {.momentum = 0.9f, .dampening = 0.1f, .nesterov = true}), ValueError,
                   "nesterov momentum requires");
  EXPECT_THROW_MSG(Adam({p}, {.beta1 = 1.0f}), ValueError, "Adam: invalid beta1 1");
  EXPECT_THROW_MSG(AdamW({p}, {.beta2 = -0.1f}), ValueError, "AdamW: invalid beta2 -0.1");
  EXPECT_THROW_MSG(Adam({p}, {.eps = -1e-8f}), ValueError, "Adam: invalid eps -1e-08");
  EXPECT_THROW_MSG(AdamW({p}, {.weight_decay = NAN}), ValueError, "AdamW: invalid weight_decay nan");
}

// ---------------------------------------------------------------------------- clip_grad_norm

TEST(ClipGradNorm, ScalesWhenAboveMaxNorm) {
  Tensor a = Tensor::zeros({2}).set_requires_grad(true);
  Tensor b = Tensor::zeros({1}).set_requires_grad(true);
  Tensor c = Tensor::zeros({3}).set_requires_grad(true);  // no gradient: skipped
  a.grad_accumulator().copy_from(Tensor::from_vector(std::vector<float>{3.0f, 4.0f}, {2}));
  b.grad_accumulator().fill(12.0f);
  // total = √(9 + 16 + 144) = 13; coef = 6.5 / (13 + 1e-6)
  EXPECT_FLOAT_EQ(clip_grad_norm({a, b, c}, 6.5f), 13.0f);
  const float coef = 6.5f / (13.0f + 1e-6f);
  EXPECT_FLOAT_EQ(a.grad().to_vector()[0], 3.0f * coef);
  EXPECT_FLOAT_EQ(a.grad().to_vector()[1], 4.0f * coef);
  EXPECT_FLOAT_EQ(b.grad().item(), 12.0f * coef);
  EXPECT_FALSE(c.has_grad());
}

TEST(ClipGradNorm, LeavesSmallGradientsBitExact) {
  Tensor a = testing::random_tensor({7}, 1).set_requires_grad(true);
  a.grad_accumulator().copy_from(testing::random_tensor({7}, 2));
  const std::vector<float> before = a.grad().to_vector();
  const float norm = clip_grad_norm({a}, 100.0f);
  double expected = 0;
  for (float g : before) expected += static_cast<double>(g) * g;
  EXPECT_FLOAT_EQ(norm, static_cast<float>(std::sqrt(expected)));
  EXPECT_EQ(a.grad().to_vector(), before);
  // max_norm equal to the norm: coef = norm / (norm + 1e-6) < 1 still scales, as PyTorch.
  Tensor b = Tensor::zeros({2}).set_requires_grad(true);
  b.grad_accumulator().copy_from(Tensor::from_vector(std::vector<float>{3.0f, 4.0f}, {2}));
  EXPECT_EQ(clip_grad_norm({b}, 5.0f), 5.0f);
  EXPECT_EQ(b.grad().to_vector()[0], 3.0f * (5.0f / (5.0f + 1e-6f)));
  EXPECT_LT(b.grad().to_vector()[0], 3.0f);
  EXPECT_EQ(clip_grad_norm({Tensor::zeros({1})}, 1.0f), 0.0f);  // no gradients at all
}

TEST(ClipGradNorm, NonFiniteNormThrowsAndLeavesGradients) {
  Tensor a = Tensor::zeros({2}).set_requires_grad(true).set_name("enc.w");
  Tensor b = Tensor::zeros({2}).set_requires_grad(true).set_name("dec.b");
  a.grad_accumulator().fill(1.0f);
  b.grad_accumulator().copy_from(Tensor::from_vector(std::vector<float>{NAN, 1.0f}, {2}));
  EXPECT_THROW_MSG(clip_grad_norm({a, b}, 0.1f), ValueError,
                   "clip_grad_norm: the total gradient norm is nan (first non-finite gradient: parameter #1 'dec.b')");
  EXPECT_EQ(a.grad().to_vector(), std::vector<float>(2, 1.0f));
  b.grad_accumulator().fill(INFINITY);
  EXPECT_THROW_MSG(clip_grad_norm({a, b}, 0.1f), ValueError, "the total gradient norm is inf");
  EXPECT_EQ(a.grad().to_vector(), std::vector<float>(2, 1.0f));
  EXPECT_THROW_MSG(clip_grad_norm({a}, -1.0f), ValueError, "clip_grad_norm: max_norm must be >= 0, got -1");
}

TEST(ClipGradNorm, IndependentOfThreadCount) {
  Tensor a = Tensor::zeros({100003}).set_requires_grad(true);
  const Tensor g = testing::random_tensor({100003}, 3);
  const auto runs = testing::run_at_thread_counts(
      [&] {
        a.grad_accumulator().copy_from(g);
        const float norm = clip_grad_norm({a}, 1.0f);
        return std::pair{norm, a.grad().to_vector()};
      },
      {1, 2, 3});
  for (size_t k = 1; k < runs.size(); ++k) {
    EXPECT_EQ(runs[0].first, runs[k].first) << "1 against " << k + 1 << " threads";
    EXPECT_EQ(runs[0].second, runs[k].second) << "1 against " << k + 1 << " threads";
  }
  // ~ U(-1, 1): norm ≈ √(n/3)
  EXPECT_NEAR(runs[0].first, std::sqrt(100003.0 / 3.0), 3.0);
}

}  // namespace
}  // namespace attn::train
