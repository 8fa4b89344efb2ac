// The umbrella header compiles on its own and exposes the op families.
#include <gtest/gtest.h>

#include "attn/attn.h"

TEST(UmbrellaHeader, ExposesOps) {
  attn::Tensor x = attn::Tensor::full({2, 3}, 1.0f);
  EXPECT_FLOAT_EQ(attn::sum(attn::softmax(x)).item(), 2.0f);
}
