// The pieces of a data-parallel step that run in one process: the sharding of a global
// batch and the bucketed, weighted gradient all-reduce, against a communicator whose one
// other rank holds a copy of this rank's gradients (the mpirun runs: data_parallel_test.sh).
#include "attn/distributed/gradient_reducer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <cmath>
#include <numeric>

#include "attn/distributed/data_parallel.h"
#include "attn/distributed/shard.h"
#include "attn/error.h"

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

}  // namespace
}  // namespace attn::distributed
