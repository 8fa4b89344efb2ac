// The pieces of a data-parallel step that run in one process: the sharding of a global
// batch and the bucketed, weighted gradient all-reduce, against a communicator whose one
// other rank holds a copy of this rank's gradients (the mpirun runs: data_parallel_test.sh), and
// the tape's gradient-ready hook that starts the buckets during backward (and the share of
// the all-reduce that completes before backward ends).
#include "attn/distributed/gradient_reducer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "attn/autodiff/tape.h"
#include "attn/distributed/data_parallel.h"
#include "attn/distributed/shard.h"
#include "attn/error.h"
#include "attn/ops/elementwise.h"
#include "attn/ops/embedding.h"
#include "attn/ops/linear.h"
#include "attn/ops/loss.h"
#include "attn/ops/reduce.h"
#include "attn/ops/rnn_cell.h"

namespace attn::distributed {
namespace {

// Rank 0 of 2, where rank 1 sends what rank 0 sends: every sum is twice the input.
class MirrorOfTwo final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  int local_size() const override { return 2; }
  void all_reduce_sum(std::span<float> v) override {
    ++reduces;
    for (float& x : v) x *= 2.0f;
  }
  void all_reduce_sum(std::span<double> v) override {
    for (double& x : v) x *= 2.0;
  }
  std::unique_ptr<PendingReduce> start_all_reduce_sum(std::span<float> v) override {
    started_during_backward.push_back(autodiff::tape().size() > 0);
    all_reduce_sum(v);
    return SingleProcessCommunicator().start_all_reduce_sum(v);
  }
  void all_gather(std::span<const std::byte> mine, std::span<std::byte> all) override {
    ++gathers;
    std::memcpy(all.data(), mine.data(), mine.size());
    std::memcpy(all.data() + mine.size(), mine.data(), mine.size());
  }
  void broadcast(std::span<std::byte>, int) override {}
  void barrier() override {}
  int reduces = 0, gathers = 0;
  std::vector<bool> started_during_backward;  // per bucket started: while the tape held nodes
};

std::vector<Tensor> parameters_with_gradients() {
  Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3}, {3});
  Tensor b = Tensor::from_vector(std::vector<float>{4, 5}, {2});
  Tensor c = Tensor::from_vector(std::vector<float>{6}, {1});  // no gradient on this rank
  for (Tensor* t : {&a, &b, &c}) t->set_requires_grad(true);
  const float ga[] = {0.5f, -1.0f, 2.0f}, gb[] = {8.0f, -4.0f};
  std::copy(ga, ga + 3, a.grad_accumulator().f32());
  std::copy(gb, gb + 2, b.grad_accumulator().f32());
  return {a, b, c};
}

void expect_scaled_sum(const std::vector<Tensor>& p) {
  // Σ over the 2 ranks of scale 0.25 × g = 0.5 × g; the missing gradient sums to zeros.
  const std::vector<float> a = p[0].grad().to_vector(), b = p[1].grad().to_vector();
  EXPECT_EQ(a, (std::vector<float>{0.25f, -0.5f, 1.0f}));
  EXPECT_EQ(b, (std::vector<float>{4.0f, -2.0f}));
  ASSERT_TRUE(p[2].has_grad());
  EXPECT_EQ(p[2].grad().to_vector(), (std::vector<float>{0.0f}));
}

TEST(GradientReducer, WeightedSumInBucketsLastParameterFirst) {
  MirrorOfTwo comm;
  std::vector<Tensor> p = parameters_with_gradients();
  // 8-byte buckets: {c, b} (12 bytes), then {a}.
  GradientReducer reducer(comm, p, {.deterministic = false, .bucket_bytes = 8});
  EXPECT_EQ(reducer.bucket_count(), 2u);
  reducer.reduce(0.25f);
  EXPECT_EQ(comm.reduces, 2);
  expect_scaled_sum(p);
}

TEST(GradientReducer, DeterministicAddsTheGatheredRanksInOrder) {
  MirrorOfTwo comm;
  std::vector<Tensor> p = parameters_with_gradients();
  GradientReducer reducer(comm, p, {.deterministic = true, .bucket_bytes = size_t{25} << 20});
  EXPECT_EQ(reducer.bucket_count(), 1u);
  reducer.reduce(0.25f);
  EXPECT_EQ(comm.gathers, 1);
  EXPECT_EQ(comm.reduces, 0);
  expect_scaled_sum(p);
}

TEST(DataParallel, LossIsTheTokenWeightedMeanAndStopIsAgreed) {
  MirrorOfTwo comm;
  const GlobalLoss g = reduce_loss(comm, 2.5, 10.0);  // both ranks: mean 2.5 over 10 tokens
  EXPECT_DOUBLE_EQ(g.loss, 2.5);
  EXPECT_DOUBLE_EQ(g.weight, 20.0);
  EXPECT_TRUE(std::isnan(reduce_loss(comm, std::nan(""), 10.0).loss));
  EXPECT_TRUE(any_rank(comm, true));
  EXPECT_FALSE(any_rank(comm, false));
}

TEST(DataParallel, RefusesAnotherConfiguration) {
  // all_gather gives rank 1 this rank's hash: the same configuration.
  MirrorOfTwo comm;
  EXPECT_NO_THROW(require_same_configuration(comm, "attn 0.1.0 --hidden 24"));
  struct OtherRankDiffers final : Communicator {
    int rank() const override { return 0; }
    int size() const override { return 2; }
    int local_size() const override { return 2; }
    void all_reduce_sum(std::span<float>) override {}
    void all_reduce_sum(std::span<double>) override {}
    std::unique_ptr<PendingReduce> start_all_reduce_sum(std::span<float> v) override {
      return SingleProcessCommunicator().start_all_reduce_sum(v);
    }
    void all_gather(std::span<const std::byte> mine, std::span<std::byte> all) override {
      std::memcpy(all.data(), mine.data(), mine.size());
      std::memset(all.data() + mine.size(), 0x5a, mine.size());
    }
    void broadcast(std::span<std::byte>, int) override {}
    void barrier() override {}
  } differs;
  try {
    require_same_configuration(differs, "attn 0.1.0 --hidden 24");
    FAIL() << "a differing rank was not refused";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 runs another attn binary or configuration"), std::string::npos)
        << e.what();
  }
}

TEST(Shard, ContiguousCoverOfTheGlobalBatch) {
  std::vector<int> rows(7);
  std::iota(rows.begin(), rows.end(), 0);
  std::vector<int> joined;
  for (int r = 0; r < 3; ++r) {
    const std::vector<int> part = shard_of(rows, {r, 3});
    EXPECT_GE(part.size(), 2u);
    joined.insert(joined.end(), part.begin(), part.end());
  }
  EXPECT_EQ(joined, rows);
  EXPECT_EQ(shard_of(rows, {0, 1}), rows);
  try {
    shard_of(std::vector<int>{1, 2}, {0, 3});
    FAIL() << "2 rows were shared by 3 ranks";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("a batch of 2 examples cannot be shared by 3 ranks"), std::string::npos)
        << e.what();
  }
}

// The tape's "gradient ready" hook (autodiff/tape.h), which starts the all-reduce buckets
// during backward: it fires once per parameter, after the last node that adds to its
// gradient (the recurrent weights' deferred products included), so what the hook sees is
// the final gradient; setting it changes no gradient bit; the reducer started from it gives
// the same sums as after backward.
constexpr int64_t V = 11, D = 6, H = 8, B = 4, T = 5;

Tensor parameter(const Shape& shape, float seed) {
  Tensor t = Tensor::empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = 0.3f * std::sin(seed + 0.7f * static_cast<float>(i));
  t.set_requires_grad(true);
  return t;
}

// emb, w_ih, w_hh, b_ih, b_hh, out_w, out_b, unused: registration order, as a module's.
std::vector<Tensor> make_parameters() {
  return {parameter({V, D}, 1),  parameter({3 * H, D}, 2), parameter({3 * H, H}, 3), parameter({3 * H}, 4),
          parameter({3 * H}, 5), parameter({V, H}, 6),     parameter({V}, 7),        parameter({3}, 8)};
}

// A GRU over T steps of B rows (the recurrent products are deferred: B < 256 rows), the
// embedding used again at the end (its first use is the first node, so it is final last),
// an output layer per step: the loss, recorded on the tape.
Tensor forward(const std::vector<Tensor>& p) {
  std::vector<int32_t> ids(B * T), targets(B);
  for (int64_t i = 0; i < B * T; ++i) ids[i] = static_cast<int32_t>((i * 7 + 3) % V);
  for (int64_t i = 0; i < B; ++i) targets[i] = static_cast<int32_t>((i * 5 + 1) % V);
  const Tensor x = embedding(Tensor::from_vector(ids, {T, B}), p[0]);  // (T, B, D)
  Tensor h = Tensor::zeros({B, H});
  Tensor loss;
  for (int64_t t = 0; t < T; ++t) {
    h = gru_cell(x.select(t), h, p[1], p[2], p[3], p[4]);
    const Tensor step_loss = cross_entropy(linear(h, p[5], p[6]), Tensor::from_vector(targets, {B}));
    loss = loss.defined() ? add(loss, step_loss) : step_loss;
  }
  const Tensor again = embedding(Tensor::from_vector(targets, {B}), p[0]);  // (B, D)
  return add(loss, scale(sum(mul(again, again)), 0.01f));
}

std::vector<std::vector<float>> gradients(const std::vector<Tensor>& p) {
  std::vector<std::vector<float>> g;
  for (const Tensor& t : p) g.push_back(t.has_grad() ? t.grad().to_vector() : std::vector<float>{});
  return g;
}

TEST(ReadyHook, FiresOncePerParameterWithTheFinalGradient) {
  std::vector<Tensor> reference = make_parameters();
  backward(forward(reference));
  const auto after_backward = gradients(reference);

  std::vector<Tensor> p = make_parameters();
  std::vector<int> calls(p.size(), 0);
  std::vector<std::vector<float>> seen(p.size());
  std::vector<size_t> order;
  autodiff::tape().set_ready_hook(p, [&](size_t i) {
    ++calls[i];
    order.push_back(i);
    seen[i] = p[i].has_grad() ? p[i].grad().to_vector() : std::vector<float>{};
  });
  const Tensor loss = forward(p);
  backward(loss);
  for (size_t i = 0; i < p.size(); ++i) {
    EXPECT_EQ(calls[i], 1) << "parameter " << i;
    EXPECT_EQ(seen[i], after_backward[i]) << "parameter " << i << ": the hook saw a gradient that was not final";
  }
  // With the hook, backward computes the same bits.
  EXPECT_EQ(gradients(p), after_backward);
  // The output layer is final before the recurrent weights, which are final before the
  // embedding (its first use is the first node); the unused parameter comes at the end.
  ASSERT_EQ(order.size(), p.size());
  const auto position = [&](size_t i) { return std::find(order.begin(), order.end(), i) - order.begin(); };
  EXPECT_LT(position(5), position(2));
  EXPECT_LT(position(2), position(0));
  EXPECT_EQ(order.back(), 7u);
  EXPECT_TRUE(after_backward[7].empty());
  // The hook is gone after one backward.
  EXPECT_FALSE(autodiff::tape().watching());
}

TEST(ReadyHook, OverlappedReduceEqualsTheReduceAfterBackward) {
  for (const bool overlap : {false, true}) {
    SCOPED_TRACE(overlap ? "overlap" : "after backward");
    std::vector<Tensor> reference = make_parameters();
    backward(forward(reference));
    std::vector<Tensor> p = make_parameters();
    MirrorOfTwo comm;
    // 64-byte buckets: several, so some start while backward runs.
    GradientReducer reducer(comm, p, {.deterministic = false, .overlap = overlap, .bucket_bytes = 64});
    for (int step = 0; step < 2; ++step) {  // a second step: the reducer resets itself
      for (Tensor& t : p) t.drop_grad();
      reducer.begin_step();
      const Tensor loss = forward(p);
      reducer.set_scale(0.25f);
      backward(loss);
      reducer.finish_step();
      for (size_t i = 0; i < p.size(); ++i) {
        std::vector<float> want = reference[i].has_grad() ? reference[i].grad().to_vector()
                                                          : std::vector<float>(static_cast<size_t>(p[i].numel()), 0.0f);
        for (float& x : want) x *= 0.5f;  // Σ over 2 ranks of 0.25 g
        EXPECT_EQ(p[i].grad().to_vector(), want) << "parameter " << i;
      }
    }
    const size_t early =
        static_cast<size_t>(std::count(comm.started_during_backward.begin(), comm.started_during_backward.end(), true));
    EXPECT_EQ(comm.started_during_backward.size(), 2 * reducer.bucket_count());
    // MirrorOfTwo's reduces are complete when started, so with the overlap every bucket is
    // complete before backward ends (each is started, then tested, in a hook call); without
    // it none is.
    EXPECT_GT(reducer.total_bytes(), 0.0);
    if (overlap) {
      EXPECT_GT(early, 0u);
      EXPECT_EQ(reducer.done_in_backward_bytes(), reducer.total_bytes());
    } else {
      EXPECT_EQ(early, 0u);
      EXPECT_EQ(reducer.done_in_backward_bytes(), 0.0);
    }
  }
}

// Rank 0 of 2 as MirrorOfTwo, but a started all-reduce completes only at its
// `tests_to_complete`-th test() (0: only in wait()), as MPI's does once the other rank has
// joined it; counts the test() and wait() calls that come after a reduce was complete.
class HeldMirrorOfTwo final : public Communicator {
 public:
  explicit HeldMirrorOfTwo(int tests_to_complete) : tests_to_complete_(tests_to_complete) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  int local_size() const override { return 2; }
  void all_reduce_sum(std::span<float> v) override {
    for (float& x : v) x *= 2.0f;
  }
  void all_reduce_sum(std::span<double> v) override {
    for (double& x : v) x *= 2.0;
  }
  struct Held final : PendingReduce {
    Held(HeldMirrorOfTwo& comm, std::span<float> v) : comm(comm), values(v) {}
    void complete() {
      for (float& x : values) x *= 2.0f;
      done = true;
    }
    bool test() override {
      if (done) return ++comm.calls_after_done, true;
      if (comm.tests_to_complete_ > 0 && ++tests == comm.tests_to_complete_) complete();
      return done;
    }
    void wait() override {
      if (done) return void(++comm.calls_after_done);
      ++comm.waits;
      comm.waited_bytes += static_cast<double>(values.size() * sizeof(float));
      complete();
    }
    HeldMirrorOfTwo& comm;
    std::span<float> values;
    int tests = 0;
    bool done = false;
  };
  std::unique_ptr<PendingReduce> start_all_reduce_sum(std::span<float> v) override {
    return std::make_unique<Held>(*this, v);
  }
  void all_gather(std::span<const std::byte>, std::span<std::byte>) override {}
  void broadcast(std::span<std::byte>, int) override {}
  void barrier() override {}
  int waits = 0, calls_after_done = 0;
  double waited_bytes = 0.0;

 private:
  int tests_to_complete_;
};

// allreduce_done_in_backward counts a bucket only when its all-reduce completed in the
// hook, not when it merely started there; a completed one is not tested or waited for again.
TEST(ReadyHook, DoneInBackwardCountsCompletedBucketsOnly) {
  std::vector<Tensor> reference = make_parameters();
  backward(forward(reference));
  struct Case {
    const char* name;
    int tests_to_complete;
    bool overlap;
  };
  for (const Case c : {Case{"in flight until finish_step", 0, true}, Case{"complete at the first test", 1, true},
                       Case{"complete at the second test", 2, true}, Case{"after backward", 1, false}}) {
    SCOPED_TRACE(c.name);
    std::vector<Tensor> p = make_parameters();
    HeldMirrorOfTwo comm(c.tests_to_complete);
    // The unused parameter registered first, so that it falls in the last bucket: it is
    // ready only at the end of backward, and in the first bucket it would hold every bucket
    // back to the last hook call.
    std::vector<Tensor> registered = {p[7]};
    registered.insert(registered.end(), p.begin(), p.begin() + 7);
    GradientReducer reducer(comm, registered, {.deterministic = false, .overlap = c.overlap, .bucket_bytes = 64});
    ASSERT_GT(reducer.bucket_count(), 2u);
    reducer.begin_step();
    const Tensor loss = forward(p);
    reducer.set_scale(0.25f);
    backward(loss);
    reducer.finish_step();
    for (size_t i = 0; i < p.size(); ++i) {  // the sums are right whenever the reduces complete
      std::vector<float> want = reference[i].has_grad() ? reference[i].grad().to_vector()
                                                        : std::vector<float>(static_cast<size_t>(p[i].numel()), 0.0f);
      for (float& x : want) x *= 0.5f;
      EXPECT_EQ(p[i].grad().to_vector(), want) << "parameter " << i;
    }
    EXPECT_EQ(comm.calls_after_done, 0) << "a completed all-reduce was tested or waited for again";
    const double done = reducer.done_in_backward_bytes(), total = reducer.total_bytes();
    if (!c.overlap || c.tests_to_complete == 0) {
      // Started in the hook (with overlap) but complete only in finish_step(): nothing hidden.
      EXPECT_EQ(done, 0.0);
      EXPECT_EQ(comm.waits, static_cast<int>(reducer.bucket_count()));
    } else if (c.tests_to_complete == 1) {
      // Every bucket starts in a hook call and is tested in the same call.
      EXPECT_EQ(done, total);
      EXPECT_EQ(comm.waits, 0);
    } else {
      // Two tests: a bucket completes at the hook call after the one that started it, so the
      // last bucket, started by the last hook call, is still in flight after backward.
      EXPECT_GT(done, 0.0);
      EXPECT_LT(done, total);
      EXPECT_GE(comm.waits, 1);
    }
    EXPECT_EQ(done + comm.waited_bytes, total) << "a bucket neither completed in backward nor was waited for";
  }
}

}  // namespace
}  // namespace attn::distributed
