#pragma once
// Sentence-level diagnostics of a translation system beyond BLEU (issue 32, docs/results.md),
// over whitespace-separated words of detokenised text (case kept) and the attention of decoding:
//
//   copy_accuracy        of the source words outside the target vocabulary (never seen in the
//                        training targets) that the reference holds too, i.e. words to carry
//                        over unchanged (on Multi30k: names and numbers), the share that appears
//                        among the hypothesis's words
//   repetition_rate      the share of hypotheses holding an n-gram (n = 2, 3, 4) twice or more
//                        that the source does not hold (a decoder that loops; for a source in
//                        another language nearly every n-gram is absent from it)
//   under_translation    the share of source tokens whose attention summed over the output
//                        steps stays below 0.5 (Tu et al. 2016's coverage view of a token left
//                        untranslated)
//   bleu_by_source_length  corpus BLEU of the sentences of each source-length bucket
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "attn/data/bleu.h"

namespace attn::data {

struct CopyAccuracy {
  int64_t words = 0;      // source words outside the target vocabulary held by the reference, with repeats
  int64_t copied = 0;     // those among the hypothesis's words
  int64_t sentences = 0;  // test sentences whose source holds one at least
  double rate() const { return words > 0 ? static_cast<double>(copied) / static_cast<double>(words) : 0.0; }
};
// sources[i], references[i] and hypotheses[i] belong together (ValueError when the counts differ).
CopyAccuracy copy_accuracy(const std::vector<std::string>& sources, const std::vector<std::string>& references,
                           const std::vector<std::string>& hypotheses,
                           const std::unordered_set<std::string>& target_vocabulary);
// The distinct words of `lines` (the training targets: copy_accuracy's vocabulary).
std::unordered_set<std::string> word_set(const std::vector<std::string>& lines);

// n-grams of n_min..n_max words (1 <= n_min <= n_max, else ValueError); 0 for no hypotheses.
double repetition_rate(const std::vector<std::string>& sources, const std::vector<std::string>& hypotheses,
                       int n_min = 2, int n_max = 4);

struct UnderTranslation {
  int64_t tokens = 0;  // source tokens
  int64_t under = 0;   // those whose attention sums to less than the threshold
  double rate() const { return tokens > 0 ? static_cast<double>(under) / static_cast<double>(tokens) : 0.0; }
};
// weights[i][t][s]: sentence i's attention of output step t over its source tokens s (every step
// of one sentence as long as its first; ValueError otherwise). A sentence without steps (a model
// without attention) is skipped.
UnderTranslation under_translation(const std::vector<std::vector<std::vector<float>>>& weights, float threshold = 0.5f);

// BLEU by source length (the bottleneck of Cho et al. 2014 and Bahdanau et al. 2015): sentences
// grouped by the number of words of their raw source, separated by Unicode whitespace
// (python_split: the no-break spaces before French "!" and "?" too), each group scored
// with corpus_bleu on its own sentences. The buckets are 1..upper[0], upper[0]+1..upper[1], ...,
// and upper.back()+1 and longer (an empty source counts in the first).
inline const std::vector<int64_t> kSourceLengthBuckets = {5, 10, 15, 20, 25, 30};  // 1-5 ... 26-30, 31+
struct LengthBucket {
  int64_t min_words = 1, max_words = 0;  // inclusive; max_words 0: no upper bound
  int64_t sentences = 0;
  std::optional<BleuResult> bleu;  // none for a bucket without sentences
  std::string label() const;       // "1-5", "31+"
};
// The bucket index of a source of `words` words. ValueError when `upper` is empty or not
// strictly increasing from >= 1.
size_t source_length_bucket(int64_t words, const std::vector<int64_t>& upper = kSourceLengthBuckets);
// Every bucket, empty ones included. ValueError when the counts differ (or for `upper`, above).
std::vector<LengthBucket> bleu_by_source_length(const std::vector<std::string>& sources,
                                                const std::vector<std::string>& hypotheses,
                                                const std::vector<std::string>& references,
                                                const std::vector<int64_t>& upper = kSourceLengthBuckets,
                                                const BleuOptions& options = {});

}  // namespace attn::data
