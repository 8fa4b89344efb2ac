// The attention ops' shared options (issue 3): the (B, S) key padding mask as an
// alternative to lengths, dropout on the weights, Xavier-initialised parameters, and the
// teaching error messages — for additive, Luong (dot / general / concat, scaled), location
// and local (local-m / local-p) attention, and the hard-attention hint.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/nn/attention_init.h"
#include "attn/nn/init.h"
#include "attn/ops/attention.h"
#include "attn/ops/dropout.h"
#include "attn/ops/elementwise.h"
#include "attn/ops/hard_attention.h"
#include "attn/ops/local_attention.h"
#include "attn/ops/reduce.h"
#include "attn/ops/softmax.h"
#include "test_support.h"

namespace attn {
namespace {
using namespace attn::testing;  // the helpers of tests/support

constexpr int64_t B = 3, T = 2, S = 6, D = 4, E = 4, A = 5;

Tensor i32(const std::vector<int32_t>& v, const Shape& shape) { return Tensor::from_vector(v, shape); }

// lengths {6, 3, 0}: the mask a padded batch would have.
Tensor suffix_lengths() { return i32({6, 3, 0}, {B}); }
Tensor suffix_mask() {
  return i32({1, 1, 1, 1, 1, 1,  //
              1, 1, 1, 0, 0, 0,  //
              0, 0, 0, 0, 0, 0},
             {B, S});
}
// Holes anywhere (not a suffix), a row with one kept position, a fully masked row; the
// last position of every non-empty row kept... except row 1 (extent 4).
Tensor holey_mask() {
  return i32({0, 1, 1, 0, 1, 1,  //
              0, 0, 0, 7, 0, 0,  //
              0, 0, 0, 0, 0, 0},
             {B, S});
}

// The ops under test, as one call each with the same (query, keys, values) and parameters.
enum class Kind { additive, additive_normalized, dot, general, concat, scaled_general, location, local_m, local_p };
const Kind kAllKinds[] = {Kind::additive, Kind::additive_normalized, Kind::dot,      Kind::general,
                          Kind::concat,   Kind::scaled_general,      Kind::location, Kind::local_m,
                          Kind::local_p};
const char* kind_name(Kind k) {
  switch (k) {
    case Kind::additive:
      return "additive";
    case Kind::additive_normalized:
      return "additive_normalized";
    case Kind::dot:
      return "dot";
    case Kind::general:
      return "general";
    case Kind::concat:
      return "concat";
    case Kind::scaled_general:
      return "scaled_general";
    case Kind::location:
      return "location";
    case Kind::local_m:
      return "local_m";
    case Kind::local_p:
      return "local_p";
  }
  return "?";
}

// Shared option fields of one call.
struct Common {
  Tensor mask;
  float dropout = 0.0f;
  bool training = true;
  uint64_t seed = 0;  // a fresh Rng(seed) per call, so repeated calls draw the same mask
  Normalizer normalizer;
};

// Common options with only a key padding mask.
Common masked(const Tensor& mask) {
  Common cm;
  cm.mask = mask;
  return cm;
}

template <class O>
void apply(O& o, const Common& cm, Rng* rng) {
  o.key_padding_mask = cm.mask;
  o.dropout = cm.dropout;
  o.training = cm.training;
  o.rng = rng;
  if constexpr (requires { o.normalizer; }) o.normalizer = cm.normalizer;
}

// Parameters in a fixed order; `inputs` = {query, keys, values, params...}.
std::vector<Tensor> make_inputs(Kind k, bool block = true, int64_t Dq = D) {
  std::vector<Tensor> in = {leaf(block ? Shape{B, T, Dq} : Shape{B, Dq}, 11), leaf({B, S, E}, 12), leaf({B, S, E}, 13)};
  switch (k) {
    case Kind::additive:
    case Kind::additive_normalized:
      in.push_back(leaf({A, Dq}, 14));  // w_q
      in.push_back(leaf({A, E}, 15));   // w_k
      in.push_back(leaf({A}, 16));      // bias
      in.push_back(leaf({A}, 17));      // v
      if (k == Kind::additive_normalized) in.push_back(Tensor::scalar(0.8f).set_requires_grad(true));
      break;
    case Kind::dot:
      break;
    case Kind::general:
    case Kind::local_m:
      in.push_back(leaf({Dq, E}, 18));
      break;
    case Kind::scaled_general:
      in.push_back(leaf({Dq, E}, 18));
      in.push_back(Tensor::scalar(1.3f).set_requires_grad(true));
      break;
    case Kind::concat:
      in.push_back(leaf({A, Dq + E}, 19));
      in.push_back(leaf({A}, 20));
      break;
    case Kind::location:
      in.push_back(leaf({S + 2, Dq}, 21));
      in.push_back(leaf({S + 2}, 22));
      break;
    case Kind::local_p:
      in.push_back(leaf({Dq, E}, 18));
      in.push_back(leaf({A, Dq}, 23, -2.0f, 2.0f));
      in.push_back(leaf({A}, 24, -2.0f, 2.0f));
      break;
  }
  return in;
}

AttentionResult call(Kind k, const std::vector<Tensor>& x, const Tensor& lengths, const Common& cm,
                     float temperature = 1.0f) {
  Rng rng(cm.seed);
  switch (k) {
    case Kind::additive:
    case Kind::additive_normalized: {
      AdditiveOptions o;
      o.normalize = k == Kind::additive_normalized;
      if (o.normalize) o.g = x[7];
      o.temperature = temperature;
      apply(o, cm, &rng);
      return additive_attention(x[0], additive_project_keys(x[1], x[4]), x[2], x[3], x[5], x[6], lengths, o);
    }
    case Kind::dot:
    case Kind::general:
    case Kind::scaled_general:
    case Kind::concat: {
      LuongOptions o;
      o.score = k == Kind::dot ? LuongScore::dot : k == Kind::concat ? LuongScore::concat : LuongScore::general;
      if (k != Kind::dot) o.w = x[3];
      if (k == Kind::concat) o.v = x[4];
      if (k == Kind::scaled_general) o.scale = x[4];
      o.temperature = temperature;
      apply(o, cm, &rng);
      return luong_attention(x[0], x[1], x[2], lengths, o);
    }
    case Kind::location: {
      LocationOptions o;
      o.temperature = temperature;
      apply(o, cm, &rng);
      return location_attention(x[0], x[2], x[3], x[4], lengths, o);
    }
    case Kind::local_m:
    case Kind::local_p: {
      LocalOptions o;
      o.mode = k == Kind::local_m ? LocalMode::monotonic : LocalMode::predictive;
      o.window = 2;
      o.w = x[3];
      if (k == Kind::local_p) {
        o.w_p = x[4];
        o.v_p = x[5];
      }
      o.temperature = temperature;
      apply(o, cm, &rng);
      return local_attention(x[0], x[1], x[2], lengths, o);
    }
  }
  return {};
}

// Loss touching both outputs, so gradients flow through the context and the weights.
Tensor both(const AttentionResult& r) {
  return add(sum(mul(r.context, random_tensor(r.context.shape(), 91))),
             sum(mul(r.weights, random_tensor(r.weights.shape(), 92))));
}

std::vector<std::vector<float>> grads_of(Kind k, const std::vector<Tensor>& proto, const Tensor& lengths,
                                         const Common& cm) {
  std::vector<Tensor> x;
  for (const Tensor& t : proto) x.push_back(t.detach().clone().set_requires_grad(true));
  backward(both(call(k, x, lengths, cm)));
  std::vector<std::vector<float>> g;
  for (const Tensor& t : x) g.push_back(t.has_grad() ? t.grad().to_vector() : std::vector<float>());
  return g;
}

::testing::AssertionResult bit_equal(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return ::testing::AssertionFailure() << a.shape().str() << " vs " << b.shape().str();
  const auto x = a.to_vector(), y = b.to_vector();
  for (size_t i = 0; i < x.size(); ++i)
    if (!(x[i] == y[i])) return ::testing::AssertionFailure() << "index " << i << ": " << x[i] << " vs " << y[i];
  return ::testing::AssertionSuccess();
}

// ---- normalisers ----------------------------------------------------------------------------

// The kinds whose ops take options.normalizer.
const Kind kNormalizerKinds[] = {Kind::additive, Kind::additive_normalized, Kind::dot, Kind::general, Kind::concat,
                                 Kind::location};
const Normalizer kSparseNormalizers[] = {
    {NormalizerKind::sparsemax}, {NormalizerKind::entmax15}, {NormalizerKind::entmax, 1.3f}};

Common with_normalizer(const Tensor& mask, const Normalizer& normalizer) {
  Common cm = masked(mask);
  cm.normalizer = normalizer;
  return cm;
}

// The (B, T, S) keep-mask of the (B, S) one.
Tensor per_row(const Tensor& mask) {
  std::vector<int32_t> m = mask.to_vector_i32(), rows;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) rows.insert(rows.end(), m.begin() + b * S, m.begin() + (b + 1) * S);
  return i32(rows, {B, T, S});
}

TEST(AttentionNormalizer, WeightsAreTheNormaliserOfTheScores) {
  // Every normaliser is shift-invariant, so normalise(e / τ) = normalise(log softmax(e / τ)):
  // the sparse weights follow from the softmax weights of the same call, on the kept positions.
  for (Kind k : kNormalizerKinds)
    for (float temperature : {1.0f, 0.7f}) {
      const std::vector<Tensor> x = make_inputs(k);
      const Common softmax_call = with_normalizer(holey_mask(), {});
      const std::vector<float> w = call(k, x, Tensor(), softmax_call, temperature).weights.to_vector();
      std::vector<float> log_w(w.size(), 0.0f);
      for (size_t i = 0; i < w.size(); ++i) log_w[i] = w[i] > 0.0f ? std::log(w[i]) : 0.0f;
      for (const Normalizer& n : kSparseNormalizers) {
        const Common sparse_call = with_normalizer(holey_mask(), n);
        const Tensor got = call(k, x, Tensor(), sparse_call, temperature).weights;
        const Tensor expected = normalize(Tensor::from_vector(log_w, {B, T, S}), n, per_row(holey_mask()));
        EXPECT_TRUE(tensors_close(got, expected, 1e-5f, 1e-4f))
            << kind_name(k) << " " << normalizer_name(n.kind) << " temperature " << temperature;
      }
    }
}

TEST(AttentionNormalizer, GradcheckAndFullyMaskedRows) {
  // entmax15 and 1.3-entmax are C¹ (sparsemax's kinks are checked on the op, ops/normalizer_test).
  for (Kind k : kNormalizerKinds)
    for (const Normalizer& n : {Normalizer{NormalizerKind::entmax15}, Normalizer{NormalizerKind::entmax, 1.3f}}) {
      const Common cm = with_normalizer(holey_mask(), n);
      const auto fn = [k, cm](const std::vector<Tensor>& in) { return both(call(k, in, Tensor(), cm)); };
      EXPECT_TRUE(gradcheck(fn, make_inputs(k))) << kind_name(k) << " " << normalizer_name(n.kind);
    }
  for (Kind k : kNormalizerKinds) {
    const std::vector<Tensor> x = make_inputs(k);
    const AttentionResult r = call(k, x, Tensor(), with_normalizer(holey_mask(), {NormalizerKind::sparsemax}));
    const std::vector<float> w = r.weights.to_vector();
    for (int64_t i = 2 * T * S; i < B * T * S; ++i) EXPECT_EQ(w[i], 0.0f) << kind_name(k) << " fully masked row";
    backward(both(r));
    for (const Tensor& t : x) {
      if (!t.has_grad()) continue;
      for (float g : t.grad().to_vector()) EXPECT_FALSE(std::isnan(g)) << kind_name(k);
    }
  }
}

TEST(AttentionNormalizer, ErrorPaths) {
  const std::vector<Tensor> x = make_inputs(Kind::general);
  for (float alpha : {1.0f, 0.0f, std::nanf("")})
    EXPECT_THROW_MSG(call(Kind::general, x, Tensor(), with_normalizer(Tensor(), {NormalizerKind::entmax, alpha})),
                     ValueError, "luong_attention(general): entmax's alpha must be finite and > 1");
  EXPECT_THROW_MSG(call(Kind::scaled_general, make_inputs(Kind::scaled_general), Tensor(),
                        with_normalizer(Tensor(), {NormalizerKind::sparsemax})),
                   ValueError, "the learned 'scale' is trained through the softmax");
  const std::vector<Tensor> a = make_inputs(Kind::additive);
  AdditiveOptions o;
  o.smoothing = true;
  o.normalizer = {NormalizerKind::entmax15};
  EXPECT_THROW_MSG(additive_attention(a[0], additive_project_keys(a[1], a[4]), a[2], a[3], a[5], a[6], Tensor(), o),
                   ValueError, "additive_attention: smoothing normalises σ(e) in place of the softmax");
}

// ---- key padding mask ------------------------------------------------------------------------

TEST(AttentionMask, MaskEqualToLengthsGivesBitIdenticalResultsAndGradients) {
  for (Kind k : kAllKinds) {
    SCOPED_TRACE(kind_name(k));
    const std::vector<Tensor> x = make_inputs(k);
    Common by_mask = masked(suffix_mask());
    const AttentionResult a = call(k, x, suffix_lengths(), Common{});
    const AttentionResult m = call(k, x, Tensor(), by_mask);
    EXPECT_TRUE(bit_equal(m.context, a.context));
    EXPECT_TRUE(bit_equal(m.weights, a.weights));
    const auto ga = grads_of(k, x, suffix_lengths(), Common{});
    const auto gm = grads_of(k, x, Tensor(), by_mask);
    for (size_t i = 0; i < ga.size(); ++i) EXPECT_EQ(ga[i], gm[i]) << "gradient of input " << i;
  }
}

TEST(AttentionMask, NeitherLengthsNorMaskMeansEveryPositionIsReal) {
  for (Kind k : kAllKinds) {
    SCOPED_TRACE(kind_name(k));
    const std::vector<Tensor> x = make_inputs(k);
    const AttentionResult full = call(k, x, i32({S, S, S}, {B}), Common{});
    const AttentionResult none = call(k, x, Tensor(), Common{});
    EXPECT_TRUE(bit_equal(none.context, full.context));
    EXPECT_TRUE(bit_equal(none.weights, full.weights));
  }
}

// A softmax over a subset is the full softmax restricted to it and renormalised: the masked
// weights of the global ops follow from the unmasked ones (checked against references in
// the per-op tests). The context is then recomputed in double.
TEST(AttentionMask, ArbitraryMaskGivesRenormalisedWeightsAndExactZeros) {
  const Kind global[] = {Kind::additive, Kind::additive_normalized, Kind::dot,     Kind::general,
                         Kind::concat,   Kind::scaled_general,      Kind::location};
  const std::vector<int32_t> keep = holey_mask().to_vector_i32();
  for (Kind k : global) {
    for (bool block : {false, true}) {
      SCOPED_TRACE(std::string(kind_name(k)) + (block ? " block" : " step"));
      const std::vector<Tensor> x = make_inputs(k, block);
      const int64_t Tq = block ? T : 1;
      Common cm = masked(holey_mask());
      const AttentionResult full = call(k, x, Tensor(), Common{}, 0.7f);
      const AttentionResult m = call(k, x, Tensor(), cm, 0.7f);
      const auto wf = full.weights.to_vector(), wm = m.weights.to_vector(), val = x[2].to_vector();
      std::vector<float> w_ref(wf.size()), c_ref(B * Tq * E, 0.0f);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < Tq; ++t) {
          const int64_t r = b * Tq + t;
          double z = 0.0;
          for (int64_t s = 0; s < S; ++s) z += keep[b * S + s] ? wf[r * S + s] : 0.0;
          for (int64_t s = 0; s < S; ++s) {
            w_ref[r * S + s] = keep[b * S + s] ? static_cast<float>(wf[r * S + s] / z) : 0.0f;
            if (!keep[b * S + s]) {
              EXPECT_EQ(wm[r * S + s], 0.0f) << "masked weight not exactly 0 at " << r << "," << s;
            }
          }
          for (int64_t e = 0; e < E; ++e) {
            double c = 0.0;
            for (int64_t s = 0; s < S; ++s) c += static_cast<double>(w_ref[r * S + s]) * val[(b * S + s) * E + e];
            c_ref[r * E + e] = static_cast<float>(c);
          }
        }
      EXPECT_TRUE(tensors_close(m.weights, Tensor::from_vector(w_ref, m.weights.shape()), 1e-6f, 1e-5f));
      EXPECT_TRUE(tensors_close(m.context, Tensor::from_vector(c_ref, m.context.shape()), 1e-5f, 1e-4f));
    }
  }
}

// Local attention with a mask: masked slots of the window get 0, the kept ones renormalise
// (local-m: the restricted, renormalised unmasked weights; local-p: the Gaussian factor is
// the same, so w_mask / w_full is one constant per row). The holey mask keeps the last
// position of rows 0 so the extent (and local-p's p_t) matches the unmasked call there.
TEST(AttentionMask, LocalAttentionMasksInsideTheWindow) {
  const std::vector<int32_t> keep = holey_mask().to_vector_i32();
  for (Kind k : {Kind::local_m, Kind::local_p}) {
    SCOPED_TRACE(kind_name(k));
    const std::vector<Tensor> x = make_inputs(k);
    Common cm = masked(holey_mask());
    const AttentionResult full = call(k, x, Tensor(), Common{});
    const AttentionResult m = call(k, x, Tensor(), cm);
    const auto wf = full.weights.to_vector(), wm = m.weights.to_vector();
    for (int64_t t = 0; t < T; ++t) {  // row b = 0: extent S, as unmasked
      const int64_t r = t;
      double ratio = -1.0;
      int kept = 0;
      for (int64_t s = 0; s < S; ++s) {
        if (!keep[s]) {
          EXPECT_EQ(wm[r * S + s], 0.0f) << "masked slot " << s << " of row " << r;
          continue;
        }
        if (wf[r * S + s] == 0.0f) {
          EXPECT_EQ(wm[r * S + s], 0.0f) << "outside the window: " << s;
          continue;
        }
        const double q = wm[r * S + s] / wf[r * S + s];
        if (ratio < 0) ratio = q;
        EXPECT_NEAR(q, ratio, 1e-5 * ratio) << "slot " << s << " of row " << r;
        ++kept;
      }
      EXPECT_GT(kept, 0);
      EXPECT_GT(ratio, 1.0);  // a masked slot in the window removed mass: the rest grow
    }
    // Row 1 keeps only position 3 (extent 4): its window [t-2, t+2] ∩ [0, 3] holds it for
    // t = 1 (local-m): all mass there; row 2 is fully masked: zero.
    if (k == Kind::local_m) {
      EXPECT_FLOAT_EQ(wm[(1 * T + 1) * S + 3], 1.0f);
      EXPECT_EQ(wm[(1 * T + 0) * S + 3], 0.0f);  // t = 0: window [0, 2], all masked
    }
    for (int64_t t = 0; t < T; ++t)
      for (int64_t s = 0; s < S; ++s) EXPECT_EQ(wm[(2 * T + t) * S + s], 0.0f);
    for (float c : m.context.to_vector()) EXPECT_TRUE(std::isfinite(c));
  }
}

TEST(AttentionMask, FullyMaskedRowsGiveZerosAndZeroGradientsNeverNaN) {
  for (Kind k : kAllKinds) {
    SCOPED_TRACE(kind_name(k));
    std::vector<Tensor> x = make_inputs(k);
    Common cm = masked(Tensor::zeros({B, S}, DType::i32));
    const AttentionResult r = call(k, x, Tensor(), cm);
    for (float v : r.weights.to_vector()) EXPECT_EQ(v, 0.0f);
    for (float v : r.context.to_vector()) EXPECT_EQ(v, 0.0f);
    backward(both(r));
    for (size_t i = 0; i < x.size(); ++i) {
      if (!x[i].has_grad()) continue;
      for (float g : x[i].grad().to_vector()) {
        ASSERT_TRUE(std::isfinite(g)) << "input " << i;
        // location's w_a / b_a and local-p's predictor get exactly 0; so do all others.
        EXPECT_EQ(g, 0.0f) << "input " << i;
      }
    }
  }
}

TEST(AttentionMask, GradcheckWithAnArbitraryMask) {
  for (Kind k : kAllKinds) {
    for (bool block : {false, true}) {
      SCOPED_TRACE(std::string(kind_name(k)) + (block ? " block" : " step"));
      Common cm = masked(holey_mask());
      const Tensor weights_seed = random_tensor(block ? Shape{B, T, S} : Shape{B, S}, 93);
      EXPECT_TRUE(gradcheck(
          [&](const std::vector<Tensor>& x) {
            const AttentionResult r = call(k, x, Tensor(), cm, 0.9f);
            // context and weights together: flatten both into one output
            return add(sum(mul(r.weights, weights_seed)), sum(mul(r.context, r.context)));
          },
          make_inputs(k, block)));
    }
  }
}

TEST(AttentionMask, ErrorPaths) {
  for (Kind k : kAllKinds) {
    SCOPED_TRACE(kind_name(k));
    const std::vector<Tensor> x = make_inputs(k);
    Common cm = masked(suffix_mask());
    EXPECT_THROW_MSG(call(k, x, suffix_lengths(), cm), ValueError,
                     "'lengths' and 'key_padding_mask' are exclusive; give one of them (or neither), not both");
    cm.mask = Tensor::zeros({B, S});
    EXPECT_THROW_MSG(call(k, x, Tensor(), cm), ValueError,
                     "'key_padding_mask' must be int32 (nonzero = keep, 0 = masked), got float32: convert a boolean "
                     "mask with astype(int32)");
    cm.mask = Tensor::zeros({B, S + 1}, DType::i32);
    EXPECT_THROW_MSG(call(k, x, Tensor(), cm), ShapeError, "'key_padding_mask' expected (B=3, S=6), got (3, 7)");
    cm.mask = Tensor::zeros({S}, DType::i32);
    EXPECT_THROW_MSG(call(k, x, Tensor(), cm), ShapeError, "'key_padding_mask' expected (B=3, S=6), got (6)");
    cm.mask = Tensor::zeros({1, S}, DType::i32);  // never broadcast over the batch
    EXPECT_THROW_MSG(call(k, x, Tensor(), cm), ShapeError, "'key_padding_mask' expected (B=3, S=6), got (1, 6)");
  }
  const std::vector<Tensor> x = make_inputs(Kind::additive);
  Common cm = masked(suffix_mask());
  EXPECT_THROW_MSG(call(Kind::additive, x, suffix_lengths(), cm), ValueError, "additive_attention: 'lengths' and");
}

// ---- dropout on the weights ----------------------------------------------------------------------

TEST(AttentionDropout, ZeroOrEvalIsTheIdentityAndLeavesTheRngAlone) {
  for (Kind k : kAllKinds) {
    SCOPED_TRACE(kind_name(k));
    const std::vector<Tensor> x = make_inputs(k);
    const AttentionResult plain = call(k, x, suffix_lengths(), Common{});
    Common zero;
    zero.dropout = 0.0f;
    zero.seed = 5;
    EXPECT_TRUE(bit_equal(call(k, x, suffix_lengths(), zero).context, plain.context));
    Common eval;
    eval.dropout = 0.5f;
    eval.training = false;
    const AttentionResult e = call(k, x, suffix_lengths(), eval);
    EXPECT_TRUE(bit_equal(e.context, plain.context));
    EXPECT_TRUE(bit_equal(e.weights, plain.weights));
  }
  // p = 0 and eval need no rng at all, and leave a given one untouched.
  const std::vector<Tensor> x = make_inputs(Kind::dot);
  Rng rng(7), fresh(7);
  LuongOptions o;
  o.dropout = 0.3f;
  o.training = false;
  o.rng = &rng;
  luong_attention(x[0], x[1], x[2], suffix_lengths(), o);
  o.rng = nullptr;
  luong_attention(x[0], x[1], x[2], suffix_lengths(), o);
  EXPECT_EQ(rng.next(), fresh.next());
}

// The returned weights are the post-dropout ones: exactly attn::dropout(pre-dropout weights,
// p, seed) with seed = the options' rng's next(); the context uses them.
TEST(AttentionDropout, WeightsAreDropoutOfTheSoftmaxWithTheRngSeed) {
  const float p = 0.4f;
  for (Kind k : kAllKinds) {
    SCOPED_TRACE(kind_name(k));
    const std::vector<Tensor> x = make_inputs(k);
    const AttentionResult plain = call(k, x, suffix_lengths(), Common{});
    Common cm;
    cm.dropout = p;
    cm.seed = 1234;
    const AttentionResult d = call(k, x, suffix_lengths(), cm);
    const uint64_t seed = Rng(1234).next();
    const Tensor expected = dropout(plain.weights.detach(), p, seed);
    EXPECT_TRUE(tensors_close(d.weights, expected, 0.0f, 1e-6f));
    // zero pattern and scaling
    const auto w0 = plain.weights.to_vector(), wd = d.weights.to_vector();
    int dropped = 0, kept = 0;
    for (size_t i = 0; i < w0.size(); ++i) {
      if (w0[i] == 0.0f) {
        EXPECT_EQ(wd[i], 0.0f);
        continue;
      }
      if (wd[i] == 0.0f) {
        ++dropped;
      } else {
        ++kept;
        EXPECT_NEAR(wd[i], w0[i] / (1.0f - p), 1e-6f * (1.0f + w0[i]));
      }
    }
    EXPECT_GT(dropped, 0);
    EXPECT_GT(kept, 0);
    // context = used · values (double reference)
    const bool block = x[0].rank() == 3;
    const int64_t Tq = block ? T : 1;
    const auto val = x[2].to_vector();
    std::vector<float> c_ref(B * Tq * E);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < Tq; ++t)
        for (int64_t e = 0; e < E; ++e) {
          double c = 0.0;
          for (int64_t s = 0; s < S; ++s) c += static_cast<double>(wd[(b * Tq + t) * S + s]) * val[(b * S + s) * E + e];
          c_ref[(b * Tq + t) * E + e] = static_cast<float>(c);
        }
    EXPECT_TRUE(tensors_close(d.context, Tensor::from_vector(c_ref, d.context.shape()), 1e-5f, 1e-4f));
  }
}

// Two calls with one Rng draw two different masks (one next() per call).
TEST(AttentionDropout, EachCallDrawsAFreshSeed) {
  Rng rng(99);
  LuongOptions o;
  o.dropout = 0.5f;
  o.rng = &rng;
  const std::vector<Tensor> xd = make_inputs(Kind::dot);
  const Tensor w1 = luong_attention(xd[0], xd[1], xd[2], Tensor(), o).weights;
  const Tensor w2 = luong_attention(xd[0], xd[1], xd[2], Tensor(), o).weights;
  EXPECT_FALSE(bit_equal(w1, w2));
}

TEST(AttentionDropout, GradcheckWithAFixedSeed) {
  for (Kind k : kAllKinds) {
    SCOPED_TRACE(kind_name(k));
    Common cm;
    cm.dropout = 0.3f;
    cm.seed = 77;
    cm.mask = holey_mask();
    const Tensor weights_seed = random_tensor({B, T, S}, 94);
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& x) {
          const AttentionResult r = call(k, x, Tensor(), cm, 0.9f);
          return add(sum(mul(r.weights, weights_seed)), sum(mul(r.context, r.context)));
        },
        make_inputs(k)));
  }
}

TEST(AttentionDropout, ErrorPaths) {
  for (Kind k : kAllKinds) {
    SCOPED_TRACE(kind_name(k));
    const std::vector<Tensor> x = make_inputs(k);
    Common cm;
    cm.dropout = 1.0f;
    EXPECT_THROW_MSG(call(k, x, Tensor(), cm), ValueError,
                     "dropout must be in [0, 1), got 1: p = 1 would drop every weight");
    cm.dropout = -0.1f;
    EXPECT_THROW_MSG(call(k, x, Tensor(), cm), ValueError, "dropout must be in [0, 1), got -0.1");
    cm.dropout = NAN;
    EXPECT_THROW_MSG(call(k, x, Tensor(), cm), ValueError, "dropout must be in [0, 1), got nan");
  }
  const std::vector<Tensor> x = make_inputs(Kind::general);
  LuongOptions o;
  o.score = LuongScore::general;
  o.w = x[3];
  o.dropout = 0.2f;
  EXPECT_THROW_MSG(luong_attention(x[0], x[1], x[2], Tensor(), o), ValueError,
                   "luong_attention(general): dropout = 0.2 in training needs options.rng (the seed source, one draw "
                   "per call); or set training = false");
}

// ---- Xavier initialisation ---------------------------------------------------------------------------

// The same values nn::xavier_uniform_ draws from the same Rng state, in the documented order.
void expect_xavier(const Tensor& t, const Shape& shape, const Shape& as_matrix, Rng& reference) {
  ASSERT_TRUE(t.defined());
  EXPECT_EQ(t.shape(), shape);
  EXPECT_TRUE(t.requires_grad());
  Tensor expected = Tensor::empty(as_matrix);
  nn::xavier_uniform_(expected, reference);
  EXPECT_TRUE(tensors_close(t, expected.reshape(shape), 0.0f, 0.0f));
  const double a = std::sqrt(6.0 / static_cast<double>(as_matrix[0] + as_matrix[1]));
  double max_abs = 0.0;
  for (float v : t.to_vector()) max_abs = std::max(max_abs, std::fabs(static_cast<double>(v)));
  EXPECT_LE(max_abs, a);
  EXPECT_GT(max_abs, 0.5 * a);  // not a constant or a tiny init
}

TEST(AttentionInit, XavierEverywhere) {
  {
    Rng rng(3), ref(3);
    const nn::AdditiveParams p = nn::additive_attention_init(D, E, A, rng, true);
    expect_xavier(p.w_q, {A, D}, {A, D}, ref);
    expect_xavier(p.w_k, {A, E}, {A, E}, ref);
    expect_xavier(p.v, {A}, {1, A}, ref);
    EXPECT_TRUE(p.bias.requires_grad());
    for (float b : p.bias.to_vector()) EXPECT_EQ(b, 0.0f);
    EXPECT_FLOAT_EQ(p.g.item(), std::sqrt(1.0f / A));
    EXPECT_FALSE(nn::additive_attention_init(D, E, A, rng).g.defined());
  }
  {
    Rng rng(4), ref(4);
    const nn::LuongParams c = nn::luong_attention_init(LuongScore::concat, D, E + 1, A, rng);
    expect_xavier(c.w, {A, D + E + 1}, {A, D + E + 1}, ref);
    expect_xavier(c.v, {A}, {1, A}, ref);
    const nn::LuongParams g = nn::luong_attention_init(LuongScore::general, D, E + 1, A, rng);
    expect_xavier(g.w, {D, E + 1}, {D, E + 1}, ref);
    EXPECT_FALSE(g.v.defined());
    const nn::LuongParams d = nn::luong_attention_init(LuongScore::dot, D, D, A, rng);
    EXPECT_FALSE(d.w.defined());
    EXPECT_EQ(rng.next(), ref.next());  // dot draws nothing
  }
  {
    Rng rng(5), ref(5);
    const nn::LocationParams p = nn::location_attention_init(D, 9, rng);
    expect_xavier(p.w_a, {9, D}, {9, D}, ref);
    EXPECT_EQ(p.b_a.shape(), Shape({9}));
    for (float b : p.b_a.to_vector()) EXPECT_EQ(b, 0.0f);
  }
  {
    Rng rng(6), ref(6);
    const nn::LocalParams p = nn::local_attention_init(LocalMode::predictive, LuongScore::general, D, E, A, rng);
    expect_xavier(p.w, {D, E}, {D, E}, ref);
    expect_xavier(p.w_p, {A, D}, {A, D}, ref);
    expect_xavier(p.v_p, {A}, {1, A}, ref);
    const nn::LocalParams m = nn::local_attention_init(LocalMode::monotonic, LuongScore::dot, D, D, A, rng);
    EXPECT_FALSE(m.w.defined());
    EXPECT_FALSE(m.w_p.defined());
    EXPECT_FALSE(m.v_p.defined());
  }
  // The helpers' parameters plug straight into the ops.
  Rng rng(8);
  const nn::AdditiveParams p = nn::additive_attention_init(D, E, A, rng);
  const std::vector<Tensor> x = make_inputs(Kind::dot);
  const AttentionResult r =
      additive_attention(x[0], additive_project_keys(x[1], p.w_k), x[2], p.w_q, p.bias, p.v, suffix_lengths());
  EXPECT_EQ(r.context.shape(), Shape({B, T, E}));
  Rng rng2(8);
  nn::LocalParams lp = nn::local_attention_init(LocalMode::predictive, LuongScore::general, D, E, A, rng2);
  LocalOptions lo;
  lo.mode = LocalMode::predictive;
  lo.w = lp.w;
  lo.w_p = lp.w_p;
  lo.v_p = lp.v_p;
  EXPECT_EQ(local_attention(x[0], x[1], x[2], suffix_lengths(), lo).weights.shape(), Shape({B, T, S}));
  EXPECT_THROW_MSG(nn::additive_attention_init(0, E, A, rng), ValueError,
                   "additive_attention_init: sizes must be >= 1, got D=0, E=4, A=5");
  EXPECT_THROW_MSG(nn::location_attention_init(D, 0, rng), ValueError,
                   "location_attention_init: sizes must be >= 1, got D=4, S_max=0");
}

// ---- errors that teach ----------------------------------------------------------------------------

TEST(AttentionErrors, MessagesNameTheArgumentShapesAndTheFix) {
  const std::vector<Tensor> x = make_inputs(Kind::dot);
  const Tensor len = suffix_lengths();
  EXPECT_THROW_MSG(luong_attention(Tensor::zeros({D}), x[1], x[2], len), ShapeError,
                   "luong_attention(dot): 'query' expected (B, D) or (B, T, D), got (4): one query without a batch "
                   "dimension? reshape it to (1, D)");
  EXPECT_THROW_MSG(luong_attention(Tensor::zeros({B, 2, T, 2}), x[1], x[2], len), ShapeError,
                   "'query' expected (B, D) or (B, T, D), got (3, 2, 2, 2): a multi-head query (B, H, T, Dh)? use "
                   "sdpa or nn::MultiheadAttention, or merge the heads to (B, T, D)");
  EXPECT_THROW_MSG(luong_attention(Tensor::zeros({B, T, 8}), x[1], x[2], len), ShapeError,
                   "luong_attention(dot): query size D=8 must equal key size E=4 for the dot score (a bidirectional "
                   "encoder doubles E?): use score 'general' to learn a projection W (D, E), or project the state");
  EXPECT_THROW_MSG(luong_attention(x[0], x[1], x[2], i32({6, 9, 0}, {B})), ValueError,
                   "luong_attention(dot): 'lengths' value 9 at batch index 1 is out of range [0, S=6]: lengths count "
                   "real positions of the keys (S = keys.dim(1)); target lengths passed by mistake, or keys "
                   "truncated?");
  EXPECT_THROW_MSG(luong_attention(x[0], x[1], x[2], Tensor::zeros({B})), ShapeError,
                   "luong_attention(dot): 'lengths' expected dtype int32, got float32: lengths (B) count the real "
                   "source positions; pass an int32 tensor");
  LuongOptions o;
  o.temperature = 0.0f;
  EXPECT_THROW_MSG(luong_attention(x[0], x[1], x[2], len, o), ValueError,
                   "luong_attention(dot): temperature must be finite and > 0, got 0: it divides the scores (τ < 1 "
                   "sharpens, τ > 1 flattens, 1 leaves them as they are)");
  LocalOptions lo;
  lo.window = -1;
  lo.w = Tensor::zeros({D, E});
  EXPECT_THROW_MSG(local_attention(x[0], x[1], x[2], len, lo), ValueError,
                   "local_attention(local-m): window must be >= 0, got -1: it is Luong's half-width D, the window is "
                   "[p_t - D, p_t + D] (Luong et al. use D = 10)");
  EXPECT_THROW_MSG(location_attention(x[0], x[2], Tensor::zeros({S - 1, D}), Tensor(), len), ValueError,
                   "location_attention: source length S=6 exceeds S_max=5 of 'w_a': location attention scores a fixed "
                   "number of positions; create w_a with S_max >= the longest source, or truncate the sources");
  // Shape errors name the argument and the expected named shape.
  EXPECT_THROW_MSG(luong_attention(x[0], x[1], Tensor::zeros({B, S + 1, E}), len), ShapeError,
                   "luong_attention(dot): 'values' expected (B=3, S=6, E=4), got (3, 7, 4)");
  // Hard attention: post-dropout weights are not a distribution.
  Common cm;
  cm.dropout = 0.5f;
  cm.seed = 3;
  const AttentionResult d = call(Kind::dot, x, i32({6, 6, 6}, {B}), cm);
  Rng rng(1);
  EXPECT_THROW_MSG(hard_attention_sample(d.weights.detach(), x[2].detach(), true, rng), ValueError,
                   "(weights after dropout, or local-p's Gaussian-scaled weights, are not distributions: sample from "
                   "weights computed with dropout = 0)");
}

}  // namespace
}  // namespace attn
