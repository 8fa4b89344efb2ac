// The C++ reference comparison (testing::tensors_close): atol is relative to the tensor's
// scale (max |expected|, at least 1), so rounding next to zero inside a large tensor passes,
// yet an error of 1e-3 relative fails.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "test_support.h"

namespace attn::testing {
namespace {

TEST(TensorsClose, RoundingNearZeroInsideALargeTensorPasses) {
  // Issue 22's parity case: elements up to 22, the worst one -0.0369 off by 2.26e-5.
  const Tensor expected = Tensor::from_vector(std::vector<float>{22.0f, -3.5f, 0.7f, -0.036856480f}, Shape{4});
  const Tensor actual = Tensor::from_vector(std::vector<float>{22.0f, -3.5f, 0.7f, -0.036879063f}, Shape{4});
  EXPECT_TRUE(tensors_close(actual, expected));
  // The same error on a unit-scale tensor is more than 1e-5 + 1e-4 |e| allows.
  const Tensor small = Tensor::from_vector(std::vector<float>{1.0f, -0.036856480f}, Shape{2});
  const Tensor small_off = Tensor::from_vector(std::vector<float>{1.0f, -0.036879063f}, Shape{2});
  EXPECT_FALSE(tensors_close(small_off, small));
}

TEST(TensorsClose, ErrorOf1e3RelativeFails) {
  const Tensor expected = random_tensor(Shape{8, 16}, 1, -50.0f, 50.0f);
  Tensor scaled = expected.clone();
  for (int64_t i = 0; i < scaled.numel(); ++i) scaled.f32()[i] *= 1.001f;
  EXPECT_FALSE(tensors_close(scaled, expected));
  // One element, the one nearest zero, off by 1e-3 of the tensor's scale.
  Tensor one_off = expected.clone();
  int64_t nearest_zero = 0;
  float largest = 0.0f;
  for (int64_t i = 0; i < one_off.numel(); ++i) {
    if (std::fabs(one_off.f32()[i]) < std::fabs(one_off.f32()[nearest_zero])) nearest_zero = i;
    largest = std::max(largest, std::fabs(one_off.f32()[i]));
  }
  one_off.f32()[nearest_zero] += 1e-3f * largest;
  const ::testing::AssertionResult result = tensors_close(one_off, expected);
  EXPECT_FALSE(result);
  EXPECT_NE(std::string(result.message()).find("worst flat index " + std::to_string(nearest_zero)), std::string::npos)
      << result.message();
  EXPECT_TRUE(tensors_close(expected.clone(), expected));
}

}  // namespace
}  // namespace attn::testing
