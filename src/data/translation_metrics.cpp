#include "attn/data/translation_metrics.h"

#include <fmt/format.h>

#include <map>
#include <sstream>

#include "attn/error.h"

namespace attn::data {
namespace {

std::vector<std::string> words_of(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

void check_pairs(const char* op, const std::vector<std::string>& sources, const std::vector<std::string>& hypotheses) {
  if (sources.size() != hypotheses.size())
    throw ValueError(
        fmt::format("{}: {} sources but {} hypotheses or references", op, sources.size(), hypotheses.size()));
}

// The n-grams of `words` for n in [n_min, n_max], joined by a space, with their counts.
std::map<std::string, int> ngrams(const std::vector<std::string>& words, int n_min, int n_max) {
  std::map<std::string, int> counts;
  for (int n = n_min; n <= n_max; ++n)
    for (size_t i = 0; i + static_cast<size_t>(n) <= words.size(); ++i) {
      std::string g = words[i];
      for (size_t k = 1; k < static_cast<size_t>(n); ++k) g += " " + words[i + k];
      ++counts[g];
    }
  return counts;
}

}  // namespace

std::unordered_set<std::string> word_set(const std::vector<std::string>& lines) {
  std::unordered_set<std::string> set;
  for (const std::string& line : lines)
    for (std::string& w : words_of(line)) set.insert(std::move(w));
  return set;
}

CopyAccuracy copy_accuracy(const std::vector<std::string>& sources, const std::vector<std::string>& references,
                           const std::vector<std::string>& hypotheses,
                           const std::unordered_set<std::string>& target_vocabulary) {
  check_pairs("copy_accuracy", sources, hypotheses);
  check_pairs("copy_accuracy", sources, references);
  CopyAccuracy acc;
  for (size_t i = 0; i < sources.size(); ++i) {
    const std::unordered_set<std::string> out = word_set({hypotheses[i]}), ref = word_set({references[i]});
    bool any = false;
    for (const std::string& w : words_of(sources[i])) {
      if (target_vocabulary.count(w) || !ref.count(w)) continue;
      any = true;
      ++acc.words;
      acc.copied += out.count(w) > 0;
    }
    acc.sentences += any;
  }
  return acc;
}

double repetition_rate(const std::vector<std::string>& sources, const std::vector<std::string>& hypotheses, int n_min,
                       int n_max) {
  check_pairs("repetition_rate", sources, hypotheses);
  if (n_min < 1 || n_min > n_max)
    throw ValueError(
        fmt::format("repetition_rate: n-gram lengths [{}, {}] must satisfy 1 <= min <= max", n_min, n_max));
  if (hypotheses.empty()) return 0.0;
  int64_t repeating = 0;
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    const std::map<std::string, int> in_source = ngrams(words_of(sources[i]), n_min, n_max);
    for (const auto& [gram, count] : ngrams(words_of(hypotheses[i]), n_min, n_max))
      if (count >= 2 && !in_source.count(gram)) {
        ++repeating;
        break;
      }
  }
  return static_cast<double>(repeating) / static_cast<double>(hypotheses.size());
}

UnderTranslation under_translation(const std::vector<std::vector<std::vector<float>>>& weights, float threshold) {
  UnderTranslation u;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i].empty()) continue;
    std::vector<double> sums(weights[i][0].size(), 0.0);
    for (size_t t = 0; t < weights[i].size(); ++t) {
      if (weights[i][t].size() != sums.size())
        throw ValueError(fmt::format("under_translation: sentence {} step {} has {} weights, its first step {}", i, t,
                                     weights[i][t].size(), sums.size()));
      for (size_t s = 0; s < sums.size(); ++s) sums[s] += weights[i][t][s];
    }
    u.tokens += static_cast<int64_t>(sums.size());
    for (double v : sums) u.under += v < threshold;
  }
  return u;
}

std::string LengthBucket::label() const {
  return max_words > 0 ? fmt::format("{}-{}", min_words, max_words) : fmt::format("{}+", min_words);
}

namespace {

void check_bucket_bounds(const std::vector<int64_t>& upper) {
  if (upper.empty() || upper.front() < 1)
    throw ValueError("source-length buckets: the upper bounds must start at 1 or more");
  for (size_t i = 1; i < upper.size(); ++i)
    if (upper[i] <= upper[i - 1])
      throw ValueError(
          fmt::format("source-length buckets: upper bounds must increase, got {} after {}", upper[i], upper[i - 1]));
}

}  // namespace

size_t source_length_bucket(int64_t words, const std::vector<int64_t>& upper) {
  check_bucket_bounds(upper);
  size_t b = 0;
  while (b < upper.size() && words > upper[b]) ++b;
  return b;
}

std::vector<LengthBucket> bleu_by_source_length(const std::vector<std::string>& sources,
                                                const std::vector<std::string>& hypotheses,
                                                const std::vector<std::string>& references,
                                                const std::vector<int64_t>& upper, const BleuOptions& options) {
  check_pairs("bleu_by_source_length", sources, hypotheses);
  check_pairs("bleu_by_source_length", sources, references);
  check_bucket_bounds(upper);
  std::vector<LengthBucket> buckets(upper.size() + 1);
  std::vector<std::vector<std::string>> hyps(buckets.size()), refs(buckets.size());
  for (size_t b = 0; b < buckets.size(); ++b) {
    buckets[b].min_words = b == 0 ? 1 : upper[b - 1] + 1;
    buckets[b].max_words = b < upper.size() ? upper[b] : 0;
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    const size_t b = source_length_bucket(static_cast<int64_t>(python_split(sources[i]).size()), upper);
    hyps[b].push_back(hypotheses[i]);
    refs[b].push_back(references[i]);
  }
  for (size_t b = 0; b < buckets.size(); ++b) {
    buckets[b].sentences = static_cast<int64_t>(hyps[b].size());
    if (!hyps[b].empty()) buckets[b].bleu = corpus_bleu(hyps[b], refs[b], options);
  }
  return buckets;
}

}  // namespace attn::data
