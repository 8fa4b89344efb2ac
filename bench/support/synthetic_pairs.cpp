#include "synthetic_pairs.h"

#include <algorithm>

#include "attn/data/tasks.h"
#include "attn/random.h"

namespace attn::bench {
namespace {

// Draw i of a counter-based stream: splitmix64(seed ^ splitmix64(i)).
class CounterDraws {
 public:
  explicit CounterDraws(uint64_t seed) : seed_(seed) {}
  int64_t below(int64_t n) { return static_cast<int64_t>(splitmix64(seed_ ^ splitmix64(index_++)) % uint64_t(n)); }

 private:
  uint64_t seed_, index_ = 0;
};

}  // namespace

std::vector<data::EncodedPair> multi30k_like_pairs(int64_t n, int64_t vocab, uint64_t seed) {
  CounterDraws draw(seed);
  std::vector<data::EncodedPair> pairs(static_cast<size_t>(n));
  for (data::EncodedPair& p : pairs) {
    const int64_t src_len = 5 + draw.below(6) + draw.below(6) + draw.below(6) + draw.below(6);
    const int64_t tgt_len = src_len - 3 + draw.below(6);
    for (int64_t i = 0; i < src_len; ++i) p.src.push_back(static_cast<int32_t>(data::kEos + 1 + draw.below(vocab - 3)));
    for (int64_t i = 0; i < tgt_len; ++i) p.tgt.push_back(static_cast<int32_t>(data::kEos + 1 + draw.below(vocab - 3)));
  }
  return pairs;
}

std::vector<std::vector<size_t>> budget_batches(const std::vector<data::EncodedPair>& pairs, int64_t max_tokens) {
  std::vector<size_t> order(pairs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (pairs[a].src.size() != pairs[b].src.size()) return pairs[a].src.size() < pairs[b].src.size();
    return pairs[a].tgt.size() < pairs[b].tgt.size();
  });
  std::vector<std::vector<size_t>> batches(1);
  size_t longest_src = 0, longest_tgt = 0;
  for (size_t i : order) {
    const size_t s = std::max(longest_src, pairs[i].src.size()), t = std::max(longest_tgt, pairs[i].tgt.size());
    if (!batches.back().empty() && static_cast<int64_t>((batches.back().size() + 1) * (s + t + 1)) > max_tokens) {
      batches.emplace_back();
      longest_src = longest_tgt = 0;
    }
    batches.back().push_back(i);
    longest_src = std::max(longest_src, pairs[i].src.size());
    longest_tgt = std::max(longest_tgt, pairs[i].tgt.size());
  }
  return batches;
}

}  // namespace attn::bench
