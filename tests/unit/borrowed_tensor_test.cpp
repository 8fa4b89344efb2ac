// Tensor::borrow: tensors over memory attn did not allocate (zero-copy from numpy / torch).
#include <cstdint>
#include <memory>
#include <vector>

#include "attn/memory.h"
#include "attn/ops/reduce.h"
#include "attn/ops/sdpa.h"
#include "attn/tensor.h"
#include "test_support.h"

namespace attn {
namespace {

using testing::random_tensor;
using testing::tensors_close;

// Foreign memory: a vector behind a shared_ptr, as the Python binding holds an array.
std::shared_ptr<std::vector<float>> foreign(const Tensor& values, size_t lead = 0) {
  auto memory = std::make_shared<std::vector<float>>(lead + static_cast<size_t>(values.numel()), -7.0f);
  const std::vector<float> v = values.to_vector();
  std::copy(v.begin(), v.end(), memory->begin() + static_cast<std::ptrdiff_t>(lead));
  return memory;
}

TEST(BorrowedTensor, SharesTheMemoryAndKeepsItsOwnerAlive) {
  auto memory = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4, 5, 6});
  std::weak_ptr<std::vector<float>> alive = memory;
  const AllocatorStats before = allocator_stats();
  Tensor t = Tensor::borrow(memory->data(), {2, 3}, DType::f32, memory);
  EXPECT_EQ(t.f32(), memory->data()) << "borrow must not copy";
  EXPECT_TRUE(t.impl().buffer->borrowed());
  EXPECT_EQ(allocator_stats().live_bytes, before.live_bytes) << "borrowed memory is not the pool's";
  EXPECT_EQ(allocator_stats().fresh_allocations, before.fresh_allocations);
  Tensor row = t.select(1);
  EXPECT_EQ(row.f32(), memory->data() + 3);
  (*memory)[4] = 50.0f;
  EXPECT_EQ(row.to_vector(), (std::vector<float>{4, 50, 6})) << "a write to the owner's memory shows";
  memory.reset();
  t = Tensor();
  ASSERT_FALSE(alive.expired()) << "the view still holds the owner";
  EXPECT_EQ(row.to_vector()[2], 6.0f);
  row = Tensor();
  EXPECT_TRUE(alive.expired()) << "the last view releases the owner";
  EXPECT_EQ(allocator_stats().cached_bytes, before.cached_bytes) << "borrowed memory never enters the free lists";
}

TEST(BorrowedTensor, RefusesWhatItCannotWrap) {
  auto memory = std::make_shared<std::vector<float>>(8, 0.0f);
  char* bytes = reinterpret_cast<char*>(memory->data());
  EXPECT_THROW_MSG(Tensor::borrow(bytes + 2, {3}, DType::f32, memory), ValueError,
                   "borrowed float32 memory is not aligned to its 4-byte elements");
  EXPECT_THROW_MSG(Tensor::borrow(memory->data(), {3}, DType::f32, nullptr), ValueError, "needs an owner");
  EXPECT_THROW_MSG(Tensor::borrow(nullptr, {3}, DType::f32, memory), ValueError, "cannot borrow a null pointer");
  EXPECT_THROW_MSG(Tensor::borrow(memory->data(), {2, -1}, DType::f32, memory), ValueError, "negative dimension");
  EXPECT_EQ(Tensor::borrow(nullptr, {0, 4}, DType::i32, memory).numel(), 0);
}

// The kernels load unaligned (sdpa's 8-wide loads go through memcpy, the rest is scalar or
// OpenBLAS), so memory aligned to 4 bytes only, as a torch slice x[1:] is, gives the pooled
// copy's results and gradients. `lead` floats before the data make it not 64-byte aligned.
TEST(BorrowedTensor, UnalignedMemoryGivesThePooledResultsAndGradients) {
  const Shape shape{2, 3, 7, 5};  // (B, H, T, Dh)
  Tensor q0 = random_tensor(shape, 1), k0 = random_tensor(shape, 2), v0 = random_tensor(shape, 3);
  auto mq = foreign(q0, 1), mk = foreign(k0, 3), mv = foreign(v0, 5);
  Tensor q = Tensor::borrow(mq->data() + 1, shape, DType::f32, mq);
  Tensor k = Tensor::borrow(mk->data() + 3, shape, DType::f32, mk);
  Tensor v = Tensor::borrow(mv->data() + 5, shape, DType::f32, mv);
  ASSERT_NE(reinterpret_cast<uintptr_t>(q.f32()) % 64, 0u);
  SdpaOptions options;
  options.causal = true;
  options.need_weights = true;
  for (Tensor* t : {&q0, &k0, &v0, &q, &k, &v}) t->set_requires_grad(true);
  SdpaResult pooled = sdpa(q0, k0, v0, options);
  backward(sum(pooled.out));  // one graph at a time: backward clears the whole tape
  SdpaResult borrowed = sdpa(q, k, v, options);
  backward(sum(borrowed.out));
  EXPECT_TRUE(tensors_close(borrowed.out, pooled.out, 1e-6f, 1e-6f));
  EXPECT_TRUE(tensors_close(borrowed.weights, pooled.weights, 1e-6f, 1e-6f));
  EXPECT_TRUE(tensors_close(q.grad(), q0.grad(), 1e-6f, 1e-6f));
  EXPECT_TRUE(tensors_close(k.grad(), k0.grad(), 1e-6f, 1e-6f));
  EXPECT_TRUE(tensors_close(v.grad(), v0.grad(), 1e-6f, 1e-6f));
  EXPECT_FALSE(q.grad().impl().buffer->borrowed()) << "gradients live in attn's own storage";
  EXPECT_EQ((*mq)[0], -7.0f) << "nothing written before the borrowed data";
}

}  // namespace
}  // namespace attn
