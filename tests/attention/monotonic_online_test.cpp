// monotonic_online_step (attn/ops/monotonic.h), hard monotonic / MoChA inference that scores only
// the frames it reads, against the dense path it replaces: additive_energy over every frame,
// monotonic_select, monotonic_hard_weights and the values' mix over all S. Random parameters,
// ragged lengths (0 included), starts inside, at and past each row's end (exhausted rows),
// offsets r from "never stops" to "stops at once", chunks 1 to 3 and none (monotonic), A off the
// vector widths. The stops and the weights must agree bit for bit (both paths compute each energy
// with the same fused score); the context within float rounding (a BLAS product against a sum).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/ops/linear.h"
#include "attn/ops/monotonic.h"
#include "attn/ops/shape_ops.h"
#include "test_support.h"

namespace attn {
namespace {
using namespace attn::testing;  // the helpers of tests/support

constexpr int64_t B = 6, S = 9, D = 5, A = 13, E = 7;

struct Energy {
  Tensor keys, w_q, bias, v, r;  // keys (B, S, A)
};

Energy random_energy(uint64_t seed, float r) {
  return {random_tensor({B, S, A}, seed, -2.0f, 2.0f), random_tensor({A, D}, seed + 1), random_tensor({A}, seed + 2),
          random_tensor({A}, seed + 3, -2.0f, 2.0f), std::isnan(r) ? Tensor() : Tensor::full({1}, r)};
}

struct Dense {
  Tensor selected, weights, context;
};

// The dense path (nn::MonotonicAttention's eval step before monotonic_online_step).
Dense dense_step(const Tensor& q, const Tensor& values, const Tensor& lengths, const Tensor& start,
                 const Energy& select, const Energy* chunk, int64_t W) {
  const Tensor e = additive_energy(q, select.keys, select.w_q, select.bias, select.v, select.r, lengths);  // (B, S)
  const Tensor selected = monotonic_select(e, lengths, start);
  const Tensor weights =
      chunk ? monotonic_hard_weights(
                  selected, additive_energy(q, chunk->keys, chunk->w_q, chunk->bias, chunk->v, Tensor(), lengths), W)
            : monotonic_hard_weights(selected, e, 1);
  const Tensor context = reshape(bmm(reshape(weights, {B, 1, S}), values), {B, E});
  return {selected, weights, context};
}

Tensor int_tensor(const std::vector<int32_t>& v) { return Tensor::from_vector(v, {static_cast<int64_t>(v.size())}); }

TEST(MonotonicOnlineStep, EqualsTheDensePathOnRandomInputs) {
  autodiff::NoGradGuard no_grad;
  const Tensor lengths = int_tensor({9, 4, 1, 0, 7, 9});
  // Starts: from the first frame, mid-row, at the row's end (read to the end last step), past it.
  const std::vector<std::vector<int32_t>> starts = {
      {0, 0, 0, 0, 0, 0}, {3, 2, 0, 0, 6, 8}, {9, 4, 1, 0, 7, 5}, {5, 6, 3, 2, 1, 9}};
  // r: NaN for no offset; −1e4 never stops, 1e4 stops at once, the rest a mix of both.
  const std::vector<float> offsets = {NAN, -4.0f, -1.0f, 0.0f, 1.0f, -1e4f, 1e4f};
  int64_t stops = 0, nones = 0;
  uint64_t seed = 100;
  for (int64_t W : {0, 1, 2, 3}) {  // 0: monotonic; W >= 1: MoChA with chunk W
    for (float r : offsets) {
      for (const std::vector<int32_t>& s : starts) {
        SCOPED_TRACE("W " + std::to_string(W) + ", r " + std::to_string(r) + ", seed " + std::to_string(seed));
        const Energy select = random_energy(seed, r), chunk = random_energy(seed + 10, NAN);
        const Tensor q = random_tensor({B, D}, seed + 20), values = random_tensor({B, S, E}, seed + 21);
        seed += 30;
        const Tensor start = int_tensor(s);
        const Dense want = dense_step(q, values, lengths, start, select, W > 0 ? &chunk : nullptr, W);
        MonotonicOnlineOptions o;
        o.selection = {select.keys, select.w_q, select.bias, select.v, select.r};
        if (W > 0) o.chunk = {chunk.keys, chunk.w_q, chunk.bias, chunk.v, Tensor()};
        o.chunk_width = std::max<int64_t>(W, 1);
        o.need_weights = true;
        const MonotonicOnlineResult got = monotonic_online_step(q, values, lengths, start, o);
        EXPECT_EQ(got.selected.to_vector_i32(), want.selected.to_vector_i32());
        EXPECT_TRUE(tensors_close(got.weights, want.weights, 0.0f, 0.0f));
        EXPECT_TRUE(tensors_close(got.context, want.context, 1e-6f, 1e-6f));
        // Without weights: the same stops and context, and no (B, S) tensor.
        o.need_weights = false;
        const MonotonicOnlineResult lean = monotonic_online_step(q, values, lengths, start, o);
        EXPECT_FALSE(lean.weights.defined());
        EXPECT_EQ(lean.selected.to_vector_i32(), want.selected.to_vector_i32());
        EXPECT_TRUE(tensors_close(lean.context, got.context, 0.0f, 0.0f));
        for (int32_t j : want.selected.to_vector_i32()) (j >= 0 ? stops : nones) += 1;
      }
    }
  }
  // The cases exercise both outcomes, many times.
  EXPECT_GT(stops, 100);
  EXPECT_GT(nones, 100);
}

// Where no frame of [start_b, L_b) fires: selected −1, zero weights and context, never NaN;
// a row whose start is at or past its length reads nothing.
TEST(MonotonicOnlineStep, RowsThatNeverStopOrAreExhaustedGiveZeros) {
  autodiff::NoGradGuard no_grad;
  const Energy select = random_energy(7, -1e4f), chunk = random_energy(8, NAN);
  const Tensor q = random_tensor({B, D}, 9), values = random_tensor({B, S, E}, 10);
  MonotonicOnlineOptions o;
  o.selection = {select.keys, select.w_q, select.bias, select.v, select.r};
  o.chunk = {chunk.keys, chunk.w_q, chunk.bias, chunk.v, Tensor()};
  o.chunk_width = 2;
  o.need_weights = true;
  const MonotonicOnlineResult r =
      monotonic_online_step(q, values, int_tensor({9, 4, 1, 0, 7, 9}), int_tensor({0, 4, 5, 0, 2, 100}), o);
  EXPECT_EQ(r.selected.to_vector_i32(), (std::vector<int32_t>(B, -1)));
  for (float w : r.weights.to_vector()) EXPECT_EQ(w, 0.0f);
  for (float c : r.context.to_vector()) EXPECT_EQ(c, 0.0f);
}

TEST(MonotonicOnlineStep, Errors) {
  const Energy select = random_energy(1, 0.0f), chunk = random_energy(2, NAN);
  const Tensor q = random_tensor({B, D}, 3), values = random_tensor({B, S, E}, 4);
  const Tensor lengths = int_tensor({9, 4, 1, 0, 7, 9}), start = int_tensor({0, 0, 0, 0, 0, 0});
  MonotonicOnlineOptions o;
  o.selection = {select.keys, select.w_q, select.bias, select.v, select.r};
  EXPECT_THROW_MSG(monotonic_online_step(q, values, lengths, int_tensor({0, 0, -1, 0, 0, 0}), o), ValueError,
                   "monotonic_online_step: 'start' value -1 at batch index 2 is negative");
  EXPECT_THROW_MSG(monotonic_online_step(q, random_tensor({B, S + 1, E}, 5), lengths, start, o), ShapeError,
                   "monotonic_online_step: 'values'");
  EXPECT_THROW_MSG(monotonic_online_step(q, values, int_tensor({9, 4, 10, 0, 7, 9}), start, o), ValueError,
                   "'lengths' value 10 at batch index 2");
  o.chunk = {chunk.keys, chunk.w_q, chunk.bias, chunk.v, Tensor()};
  o.chunk_width = 0;
  EXPECT_THROW_MSG(monotonic_online_step(q, values, lengths, start, o), ValueError,
                   "monotonic_online_step: the chunk width W must be >= 1, got 0");
  o.chunk_width = 2;
  o.chunk.projected_keys = random_tensor({B, S, A + 1}, 6);
  EXPECT_THROW_MSG(monotonic_online_step(q, values, lengths, start, o), ShapeError,
                   "monotonic_online_step: 'chunk_projected_keys'");
}

}  // namespace
}  // namespace attn
