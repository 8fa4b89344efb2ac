// The kernels' ISA levels (src/kernels/isa.h): every level this CPU runs gives the
// baseline level's outputs, each element within kLevelRtol · (|baseline| + max |baseline|
// over that output), and the dispatched kernel runs the level chosen for the process. Levels
// differ only in vector width (the order of the sums inside a row, so a sum that cancels
// differs relative to its largest terms, not to itself) and, in sdpa, FMA contraction.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "attn/cpu.h"
#include "kernels/attention.h"
#include "kernels/elementwise.h"
#include "kernels/embedding.h"
#include "kernels/isa.h"
#include "kernels/layer_norm.h"
#include "kernels/local_attention.h"
#include "kernels/loss.h"
#include "kernels/normalizer.h"
#include "kernels/rnn_cell.h"
#include "kernels/sdpa.h"
#include "kernels/softmax.h"
#include "test_support.h"

namespace attn {
namespace {

constexpr float kLevelRtol = 1e-5f;

using Outputs = std::vector<std::vector<float>>;

// The copies of kernel `name`, indexed by level, and the one compiled for `level`.
#define LEVELS(name) \
  std::array { &kernels::isa_baseline::name, &kernels::isa_avx2::name, &kernels::isa_avx512::name }
#define AT_LEVEL(level, name) (LEVELS(name)[static_cast<int>(level)])

std::vector<float> uniform(int64_t n, uint64_t seed, float lo, float hi) {
  return testing::random_tensor({n}, seed, lo, hi).to_vector();
}

// Keeps roughly three positions in four; every 7th row fully masked.
std::vector<int32_t> ragged_mask(int64_t rows, int64_t n) {
  std::vector<int32_t> m(rows * n);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) m[r * n + i] = r % 7 != 3 && (i * 31 + r) % 4 != 0;
  return m;
}

// run(level) at baseline and at every other level this CPU runs: each output agrees with the
// baseline's within the tolerance (NaN where the baseline has NaN, inf where it has inf).
void expect_levels_agree(const std::string& what, const std::function<Outputs(IsaLevel)>& run) {
  const CpuFeatures cpu = read_cpu_features();
  const Outputs reference = run(IsaLevel::baseline);
  for (IsaLevel level : kIsaLevels) {
    if (level == IsaLevel::baseline || !isa_level_missing(level, cpu).empty()) continue;
    const Outputs outputs = run(level);
    ASSERT_EQ(outputs.size(), reference.size());
    for (size_t o = 0; o < outputs.size(); ++o) {
      const std::vector<float>&out = outputs[o], &ref = reference[o];
      ASSERT_EQ(out.size(), ref.size());
      float scale = 0.0f;
      for (float r : ref) scale = std::isfinite(r) ? std::max(scale, std::fabs(r)) : scale;
      size_t worst = 0;
      float worst_excess = 0.0f;
      for (size_t i = 0; i < out.size(); ++i) {
        const bool exact_needed = !std::isfinite(ref[i]);  // NaN or inf: the same
        const bool same = std::isnan(ref[i]) ? std::isnan(out[i]) : out[i] == ref[i];
        const float excess = exact_needed ? (same ? 0.0f : INFINITY)
                                          : std::fabs(out[i] - ref[i]) - kLevelRtol * (std::fabs(ref[i]) + scale);
        if (!(excess <= worst_excess)) worst = i, worst_excess = std::isnan(excess) ? INFINITY : excess;
      }
      EXPECT_EQ(worst_excess, 0.0f) << what << " at " << isa_level_name(level) << ": output " << o << ", element "
                                    << worst << " of " << out.size() << " is " << out[worst] << ", baseline "
                                    << ref[worst] << " (largest |baseline| " << scale << ")";
    }
  }
}

// Skips a comparison test on a CPU that runs no level beyond the baseline.
#define SKIP_WITHOUT_HIGHER_LEVELS()                             \
  if (best_isa_level(read_cpu_features()) == IsaLevel::baseline) \
  GTEST_SKIP() << "this CPU runs only the baseline level: nothing to compare"

TEST(IsaLevels, ChosenLevelIsOneThisCpuRuns) {
  const IsaLevel level = kernels::kernel_isa_level();
  EXPECT_EQ(isa_level_missing(level, read_cpu_features()), "");
  if (std::getenv("ATTN_ISA") == nullptr)
    EXPECT_EQ(level, best_isa_level(read_cpu_features()));
  else
    EXPECT_STREQ(isa_level_name(level), std::getenv("ATTN_ISA"));
}

TEST(IsaLevels, DispatchRunsTheChosenLevel) {
  const int64_t rows = 9, n = 133;
  const std::vector<float> x = uniform(rows * n, 1, -4.0f, 4.0f);
  std::vector<float> dispatched(rows * n), direct(rows * n);
  kernels::softmax_forward(x.data(), nullptr, dispatched.data(), rows, n);
  AT_LEVEL(kernels::kernel_isa_level(), softmax_forward)(x.data(), nullptr, direct.data(), rows, n);
  EXPECT_EQ(dispatched, direct);
}

TEST(IsaLevels, Softmax) {
  SKIP_WITHOUT_HIGHER_LEVELS();
  const int64_t rows = 23, n = 301;  // odd sizes: every vector tail
  const std::vector<float> x = uniform(rows * n, 2, -6.0f, 6.0f), dy = uniform(rows * n, 3, -1.0f, 1.0f);
  const std::vector<int32_t> mask = ragged_mask(rows, n);
  for (const int32_t* m : {static_cast<const int32_t*>(nullptr), mask.data()}) {
    const std::string masked = m ? " (masked)" : "";
    expect_levels_agree("softmax_forward" + masked, [&](IsaLevel l) {
      std::vector<float> y(rows * n);
      AT_LEVEL(l, softmax_forward)(x.data(), m, y.data(), rows, n);
      return Outputs{y};
    });
    expect_levels_agree("log_softmax_forward" + masked, [&](IsaLevel l) {
      std::vector<float> y(rows * n);
      AT_LEVEL(l, log_softmax_forward)(x.data(), m, y.data(), rows, n);
      return Outputs{y};
    });
    expect_levels_agree("log_softmax_backward" + masked, [&](IsaLevel l) {
      std::vector<float> y(rows * n), dx(rows * n, 0.5f);
      AT_LEVEL(l, log_softmax_forward)(x.data(), m, y.data(), rows, n);
      AT_LEVEL(l, log_softmax_backward)(y.data(), m, dy.data(), dx.data(), rows, n);
      return Outputs{dx};
    });
    expect_levels_agree("logsumexp_row" + masked, [&](IsaLevel l) {
      std::vector<float> out(rows);
      for (int64_t r = 0; r < rows; ++r) out[r] = AT_LEVEL(l, logsumexp_row)(x.data() + r * n, m ? m + r * n : m, n);
      return Outputs{out};
    });
  }
  expect_levels_agree("softmax_backward", [&](IsaLevel l) {
    std::vector<float> y(rows * n), dx(rows * n, 0.5f);
    AT_LEVEL(l, softmax_forward)(x.data(), nullptr, y.data(), rows, n);
    AT_LEVEL(l, softmax_backward)(y.data(), dy.data(), dx.data(), rows, n);
    return Outputs{dx};
  });
}

TEST(IsaLevels, Normalizers) {
  SKIP_WITHOUT_HIGHER_LEVELS();
  const int64_t B = 3, T = 4, S = 37;
  const std::vector<float> x = uniform(B * T * S, 30, -4.0f, 4.0f), dy = uniform(B * T * S, 31, -1.0f, 1.0f);
  const std::vector<int32_t> extents = {37, 20, 0}, keep = ragged_mask(B, S);
  for (kernels::NormalizerKind kind :
       {kernels::NormalizerKind::softmax, kernels::NormalizerKind::sigmoid, kernels::NormalizerKind::sparsemax,
        kernels::NormalizerKind::entmax15, kernels::NormalizerKind::entmax_bisect}) {
    const kernels::Normalizer norm{kind, 0.7f, 1.3f};
    const kernels::NormalizerRows rows{
        .rows = B * T, .n = S, .group = T, .extents = extents.data(), .mask = keep.data()};
    expect_levels_agree("normalizer kind " + std::to_string(static_cast<int>(kind)), [&](IsaLevel l) {
      std::vector<float> y(B * T * S), dx(B * T * S, 0.5f);
      AT_LEVEL(l, normalizer_forward)(norm, rows, x.data(), y.data());
      AT_LEVEL(l, normalizer_backward)(norm, rows, x.data(), y.data(), dy.data(), dx.data());
      return Outputs{y, dx};
    });
  }
}

TEST(IsaLevels, Elementwise) {
  SKIP_WITHOUT_HIGHER_LEVELS();
  const int64_t n = 4099;
  const std::vector<float> x = uniform(n, 4, -9.0f, 9.0f), pos = uniform(n, 5, 0.01f, 20.0f),
                           dy = uniform(n, 6, -1.0f, 1.0f);
  using Unary = void (*)(const float*, float*, int64_t);
  using UnaryBackward = void (*)(const float*, const float*, float*, int64_t);
  struct Case {
    const char* name;
    std::array<Unary, 3> forward;
    std::array<UnaryBackward, 3> backward;
    bool backward_takes_x;  // else the output
    const std::vector<float>* input;
  };
  const Case cases[] = {
      {"tanh", LEVELS(tanh_forward), LEVELS(tanh_backward), false, &x},
      {"sigmoid", LEVELS(sigmoid_forward), LEVELS(sigmoid_backward), false, &x},
      {"exp", LEVELS(exp_forward), LEVELS(exp_backward), false, &x},
      {"log", LEVELS(log_forward), LEVELS(log_backward), true, &pos},
      {"relu", LEVELS(relu_forward), LEVELS(relu_backward), true, &x},
      {"gelu", LEVELS(gelu_forward), LEVELS(gelu_backward), true, &x},
  };
  for (const Case& c : cases) {
    expect_levels_agree(std::string(c.name) + " forward and backward", [&](IsaLevel l) {
      const int i = static_cast<int>(l);
      std::vector<float> y(n), dx(n, 0.25f);
      c.forward[i](c.input->data(), y.data(), n);
      c.backward[i](c.backward_takes_x ? c.input->data() : y.data(), dy.data(), dx.data(), n);
      return Outputs{y, dx};
    });
  }
  expect_levels_agree("add, mul, scale_add_into, mul_add_into", [&](IsaLevel l) {
    std::vector<float> y(n), z(n), acc(dy);
    AT_LEVEL(l, add)(x.data(), pos.data(), y.data(), n);
    AT_LEVEL(l, mul)(x.data(), pos.data(), z.data(), n);
    AT_LEVEL(l, scale_add_into)(acc.data(), y.data(), 0.5f, n);
    AT_LEVEL(l, mul_add_into)(acc.data(), z.data(), x.data(), n);
    AT_LEVEL(l, add_into)(acc.data(), y.data(), n);
    return Outputs{acc};
  });
}

TEST(IsaLevels, LayerNorm) {
  SKIP_WITHOUT_HIGHER_LEVELS();
  const int64_t rows = 131, d = 77;
  const std::vector<float> x = uniform(rows * d, 7, -3.0f, 5.0f), gamma = uniform(d, 8, 0.5f, 1.5f),
                           beta = uniform(d, 9, -0.5f, 0.5f), dy = uniform(rows * d, 10, -1.0f, 1.0f);
  expect_levels_agree("layer_norm forward and backward", [&](IsaLevel l) {
    std::vector<float> y(rows * d), mean(rows), rstd(rows), dx(rows * d, 0.0f), dgamma(d, 0.0f), dbeta(d, 0.0f);
    std::vector<float> scratch(2 * kernels::layer_norm_param_blocks(rows) * d);
    AT_LEVEL(l, layer_norm_forward)
    (x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(), rows, d, 1e-5f);
    AT_LEVEL(l, layer_norm_backward_input)
    (x.data(), gamma.data(), mean.data(), rstd.data(), dy.data(), dx.data(), rows, d);
    AT_LEVEL(l, layer_norm_backward_params)
    (x.data(), mean.data(), rstd.data(), dy.data(), dgamma.data(), dbeta.data(), rows, d, scratch.data());
    return Outputs{y, mean, rstd, dx, dgamma, dbeta};
  });
}

TEST(IsaLevels, RnnCells) {
  SKIP_WITHOUT_HIGHER_LEVELS();
  const int64_t B = 5, H = 37;
  const std::vector<float> gx = uniform(B * 4 * H, 11, -3.0f, 3.0f), gh = uniform(B * 4 * H, 12, -3.0f, 3.0f),
                           b_ih = uniform(4 * H, 13, -0.5f, 0.5f), b_hh = uniform(4 * H, 14, -0.5f, 0.5f),
                           h = uniform(B * H, 15, -1.0f, 1.0f), dh_out = uniform(B * H, 16, -1.0f, 1.0f);
  expect_levels_agree("gru_cell forward and backward", [&](IsaLevel l) {
    std::vector<float> saved(B * 4 * H), h_out(B * H), dgx(B * 3 * H), dgh(B * 3 * H), dh(B * H, 0.0f);
    for (int64_t b = 0; b < B; ++b)
      std::copy(gh.begin() + b * 4 * H, gh.begin() + b * 4 * H + 3 * H, saved.begin() + b * 4 * H);
    AT_LEVEL(l, gru_cell_forward)(B, H, gx.data(), b_ih.data(), b_hh.data(), h.data(), saved.data(), h_out.data());
    AT_LEVEL(l, gru_cell_backward)(B, H, saved.data(), h.data(), dh_out.data(), dgx.data(), dgh.data(), dh.data());
    return Outputs{h_out, saved, dgx, dgh, dh};
  });
  expect_levels_agree("lstm_cell forward and backward", [&](IsaLevel l) {
    std::vector<float> saved(B * 5 * H), h_out(B * H), c_out(B * H), dgates(B * 4 * H), dc(B * H, 0.0f);
    for (int64_t b = 0; b < B; ++b)
      std::copy(gh.begin() + b * 4 * H, gh.begin() + (b + 1) * 4 * H, saved.begin() + b * 5 * H);
    AT_LEVEL(l, lstm_cell_forward)
    (B, H, gx.data(), b_ih.data(), b_hh.data(), h.data(), saved.data(), h_out.data(), c_out.data());
    AT_LEVEL(l, lstm_cell_backward)
    (B, H, saved.data(), h.data(), dh_out.data(), dh_out.data(), dgates.data(), dc.data());
    return Outputs{h_out, c_out, saved, dgates, dc};
  });
}

TEST(IsaLevels, EmbeddingAndCrossEntropy) {
  SKIP_WITHOUT_HIGHER_LEVELS();
  const int64_t n = 29, d = 19, V = 1003;
  const std::vector<float> weight = uniform(V * d, 17, -1.0f, 1.0f), dy = uniform(n * d, 18, -1.0f, 1.0f),
                           logits = uniform(n * V, 19, -8.0f, 8.0f);
  std::vector<int32_t> ids(n);
  for (int64_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>((i * 397) % V);
  ids[3] = ids[7];  // a repeated id: its gradient rows add up
  expect_levels_agree("embedding forward and backward", [&](IsaLevel l) {
    std::vector<float> y(n * d), dweight(V * d, 0.0f);
    AT_LEVEL(l, embedding_forward)(ids.data(), weight.data(), y.data(), n, d);
    AT_LEVEL(l, embedding_backward)(ids.data(), dy.data(), dweight.data(), n, d, ids[5]);
    return Outputs{y, dweight};
  });
  std::vector<int32_t> targets(ids);
  targets[2] = -100;  // ignored
  expect_levels_agree("cross_entropy forward and backward", [&](IsaLevel l) {
    std::vector<float> lse(n), loss(n), dlogits(n * V, 0.0f);
    AT_LEVEL(l, cross_entropy_forward)(logits.data(), targets.data(), n, V, -100, 0.1f, lse.data(), loss.data());
    AT_LEVEL(l, cross_entropy_backward)
    (logits.data(), targets.data(), lse.data(), n, V, -100, 0.1f, 0.5f, dlogits.data());
    return Outputs{lse, loss, dlogits};
  });
}

TEST(IsaLevels, Attention) {
  SKIP_WITHOUT_HIGHER_LEVELS();
  const int64_t B = 3, T = 5, S = 41, A = 23;
  const std::vector<float> u = uniform(B * T * A, 20, -1.0f, 1.0f), keys = uniform(B * S * A, 21, -1.0f, 1.0f),
                           v = uniform(A, 22, -1.0f, 1.0f), dscores = uniform(B * T * S, 23, -1.0f, 1.0f);
  const std::vector<int32_t> lengths = {41, 17, 1};
  std::vector<int32_t> keep(B * S, 1);
  keep[5] = keep[S + 2] = 0;
  expect_levels_agree("additive scores, masked softmax, dot scores", [&](IsaLevel l) {
    std::vector<float> scores(B * T * S, 0.0f), weights(B * T * S), dots(B * T * S, 0.0f), du(B * T * A, 0.0f),
        dkeys(B * S * A, 0.0f), dv(B * A, 0.0f), dsc(B * T * S, 0.0f), dq(B * T * A, 0.0f), dk(B * S * A, 0.0f);
    AT_LEVEL(l, attention_additive_scores_forward)
    (u.data(), keys.data(), v.data(), lengths.data(), B, T, S, A, scores.data());
    const kernels::Normalizer softmax{.scale = 1.5f};
    AT_LEVEL(l, normalizer_forward)
    (softmax, {.rows = B * T, .n = S, .group = T, .extents = lengths.data(), .mask = keep.data()}, scores.data(),
     weights.data());
    AT_LEVEL(l, normalizer_backward)
    (softmax, {.rows = B * T, .n = S, .group = T, .extents = lengths.data()}, nullptr, weights.data(), dscores.data(),
     dsc.data());
    AT_LEVEL(l, attention_additive_scores_backward)
    (u.data(), keys.data(), v.data(), dsc.data(), lengths.data(), B, T, S, A, du.data(), dkeys.data(), dv.data());
    AT_LEVEL(l, attention_dot_scores_forward)(u.data(), keys.data(), lengths.data(), B, T, S, A, dots.data());
    AT_LEVEL(l, attention_dot_scores_backward)
    (u.data(), keys.data(), dsc.data(), lengths.data(), B, T, S, A, dq.data(), dk.data());
    return Outputs{scores, weights, dots, dsc, du, dkeys, dv, dq, dk};
  });
}

TEST(IsaLevels, LocalAttentionForward) {
  SKIP_WITHOUT_HIGHER_LEVELS();
  const int64_t B = 2, T = 6, S = 30, E = 13, D_w = 4, K = 2 * D_w + 1, N = B * T;
  const std::vector<float> q = uniform(N * E, 24, -1.0f, 1.0f), keys = uniform(B * S * E, 25, -1.0f, 1.0f),
                           values = uniform(B * S * E, 26, -1.0f, 1.0f);
  const std::vector<int32_t> lengths = {30, 11};
  std::vector<int32_t> centres(N), starts(N), counts(N);
  for (int64_t r = 0; r < N; ++r) centres[r] = static_cast<int32_t>((r * 5) % S);
  kernels::local_attention_windows(centres.data(), lengths.data(), B, T, D_w, starts.data(), counts.data());
  expect_levels_agree("local_attention_forward", [&](IsaLevel l) {
    std::vector<float> soft(N * K), weights(N * K), context(N * E);
    const kernels::LocalAttentionProblem problem{.B = B,
                                                 .T = T,
                                                 .S = S,
                                                 .E = E,
                                                 .K = K,
                                                 .q = q.data(),
                                                 .keys = keys.data(),
                                                 .values = values.data(),
                                                 .starts = starts.data(),
                                                 .counts = counts.data()};
    AT_LEVEL(l, local_attention_forward)(problem, soft.data(), weights.data(), context.data());
    return Outputs{soft, weights, context};
  });
}

TEST(IsaLevels, Sdpa) {
  SKIP_WITHOUT_HIGHER_LEVELS();
  kernels::SdpaProblem p;
  p.B = 2, p.H = 3, p.T = 70, p.S = 301, p.Dh = 24, p.Dv = 20, p.scale = 0.2f, p.causal = true;
  const int64_t BH = p.B * p.H;
  const std::vector<float> q = uniform(BH * p.T * p.Dh, 27, -1.0f, 1.0f), k = uniform(BH * p.S * p.Dh, 28, -1.0f, 1.0f),
                           v = uniform(BH * p.S * p.Dv, 29, -1.0f, 1.0f),
                           dout = uniform(BH * p.T * p.Dv, 30, -1.0f, 1.0f);
  const std::vector<int32_t> key_lengths = {301, 180};
  p.key_lengths = key_lengths.data();
  expect_levels_agree("sdpa forward and backward", [&](IsaLevel l) {
    std::vector<float> out(BH * p.T * p.Dv), lse(BH * p.T), weights(BH * p.T * p.S), dq(q.size(), 0.0f),
        dk(k.size(), 0.0f), dv(v.size(), 0.0f), delta(BH * p.T);
    const int64_t fw = AT_LEVEL(l, sdpa_forward_workers)(p), bw = AT_LEVEL(l, sdpa_backward_workers)(p);
    std::vector<float> fs(fw * AT_LEVEL(l, sdpa_forward_scratch_floats)(p)),
        bs(bw * AT_LEVEL(l, sdpa_backward_scratch_floats)(p));
    AT_LEVEL(l, sdpa_forward)(p, q.data(), k.data(), v.data(), out.data(), lse.data(), weights.data(), fs.data(), fw);
    AT_LEVEL(l, sdpa_backward)
    (p, q.data(), k.data(), v.data(), out.data(), lse.data(), dout.data(), nullptr, nullptr, dq.data(), dk.data(),
     dv.data(), delta.data(), bs.data(), bw);
    return Outputs{out, lse, weights, dq, dk, dv};
  });
}

}  // namespace
}  // namespace attn
