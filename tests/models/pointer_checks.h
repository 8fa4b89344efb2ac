#pragma once
// A check shared by the RNN and Transformer pointer-generator tests (pointer_test.cpp,
// transformer_pointer_test.cpp).
#include <gtest/gtest.h>

#include <cstdint>

#include "attn/models/batch.h"
#include "attn/models/seq2seq.h"

namespace attn::models {

// A decoding of batch b with its extended ids: every row emitted ids within the extended
// vocabulary, and one copy probability in [0, 1] per emitted token.
inline void expect_pointer_decoding(const DecodeResult& r, const Batch& b) {
  ASSERT_EQ(r.copy.size(), r.tokens.size());
  for (size_t row = 0; row < r.tokens.size(); ++row) {
    ASSERT_FALSE(r.tokens[row].empty());
    ASSERT_EQ(r.copy[row].size(), r.tokens[row].size()) << "row " << row;
    for (int32_t id : r.tokens[row]) EXPECT_TRUE(id >= 0 && id < b.extended_vocab) << id;
    for (float p : r.copy[row]) EXPECT_TRUE(p >= 0.0f && p <= 1.0f) << p;
  }
}

}  // namespace attn::models
