// BeamSearch's two stopping rules (models::BeamStop, src/models/beam_search.h) on hand-made
// log-probabilities: at step 0 the best candidate is EOS (p 0.6) and the next one a word
// (p 0.4). With GNMT's length penalty (α = 1) the alive word could still win later
// (raw log 0.4 / lp(max_len) > log 0.6 / lp(1)), so `bound` steps on; `top` stops there, with
// the one-token output EOS.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "attn/error.h"
#include "attn/models/batch.h"
#include "attn/models/seq2seq.h"
#include "models/beam_search.h"
#include "test_support.h"

namespace attn::models {
namespace {

// (K, V) log-probabilities: every hypothesis gives EOS 0.6, token 3 0.4, the rest ~0.
Tensor step_log_probs(int K, int V) {
  std::vector<float> v(static_cast<size_t>(K * V), std::log(1e-9f));
  for (int k = 0; k < K; ++k) {
    v[static_cast<size_t>(k * V + kEos)] = std::log(0.6f);
    v[static_cast<size_t>(k * V + 3)] = std::log(0.4f);
  }
  return Tensor::from_vector(v, {K, V});
}

TEST(BeamStop, TopStopsAtTheStepWhoseBestCandidateEndsTheSentence) {
  const int K = 2, V = 5;
  for (const BeamStop stop : {BeamStop::bound, BeamStop::top}) {
    detail::BeamSearch search("test", 1, {.width = K, .length_penalty = 1.0f, .max_len = 10, .stop = stop}, 0);
    const bool more = search.advance(step_log_probs(K, V), nullptr);
    EXPECT_EQ(more, stop == BeamStop::bound) << to_string(stop);
    if (stop == BeamStop::top) {
      EXPECT_EQ(search.result().tokens[0], std::vector<int32_t>{kEos});
    }
  }
}

TEST(BeamStop, NamesParseAndUnknownOnesAreRefused) {
  EXPECT_EQ(parse_beam_stop("bound"), BeamStop::bound);
  EXPECT_EQ(parse_beam_stop("top"), BeamStop::top);
  EXPECT_STREQ(to_string(BeamStop::top), "top");
  EXPECT_THROW_MSG(parse_beam_stop("early"), ValueError, "unknown beam stop 'early' (valid: bound, top)");
}

}  // namespace
}  // namespace attn::models
