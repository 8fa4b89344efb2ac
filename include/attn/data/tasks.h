#pragma once
// The synthetic seq2seq tasks of the bottleneck experiment: copy, reverse and sort a
// random string of symbols. Vocabulary of 32 ids: PAD = 0, BOS = 1, EOS = 2, and the 29
// content symbols 3..31. A seeded generator gives the same batches on every run.
#include <cstdint>
#include <string>
#include <vector>

#include "attn/models/batch.h"
#include "attn/random.h"
#include "attn/tensor.h"

namespace attn::data {

using models::kBos;  // the special ids: models/batch.h
using models::kEos;
using models::kPad;
inline constexpr int32_t kFirstSymbol = 3;                         // first content symbol
inline constexpr int32_t kVocabSize = 32;                          // V
inline constexpr int32_t kNumSymbols = kVocabSize - kFirstSymbol;  // 29 content symbols

enum class TaskKind { copy, reverse, sort };

// "copy" / "reverse" / "sort"; anything else throws ValueError listing the valid names:
//   unknown task 'foo' (valid: copy, reverse, sort)
TaskKind parse_task(const std::string& name);
const char* task_name(TaskKind kind);
// "copy, reverse, sort" (for --help texts).
std::string task_names();

using models::Batch;  // models/batch.h

// The target a task asks for: copy = src, reverse = src backwards, sort = src ascending.
// Throws ValueError if src holds an id outside the content symbols 3..31.
std::vector<int32_t> task_target(TaskKind kind, const std::vector<int32_t>& src);

// Packs sources (each non-empty, content symbols only) into a padded batch with targets
// computed by task_target. Throws ValueError on an empty list, an empty source or a bad id.
Batch make_batch(TaskKind kind, const std::vector<std::vector<int32_t>>& sources);

class TaskGenerator {
 public:
  // Source lengths uniform in [min_len, max_len]; symbols uniform over the 29 content
  // symbols. Throws ValueError when min_len < 1 or min_len > max_len.
  TaskGenerator(TaskKind kind, int min_len, int max_len, uint64_t seed);

  // `batch_size` examples with random lengths. batch_size < 1 throws ValueError.
  Batch next(int batch_size);
  // `batch_size` examples of exactly `length` symbols (evaluation at a given length,
  // possibly outside [min_len, max_len]). length < 1 or batch_size < 1 throws ValueError.
  Batch fixed_length(int batch_size, int length);

  // `count` random sources with lengths uniform in [min_len, max_len] (what next() batches).
  std::vector<std::vector<int32_t>> random_sources(int count);
  // One random source of the given length (content symbols only), from the same stream.
  std::vector<int32_t> random_source(int length);

  TaskKind kind() const { return kind_; }
  int min_len() const { return min_len_; }
  int max_len() const { return max_len_; }

 private:
  TaskKind kind_;
  int min_len_;
  int max_len_;
  Rng rng_;
};

// The printable name of one id: "<pad>", "<bos>", "<eos>", the number for a content
// symbol, "<?N>" for an id outside the vocabulary.
std::string symbol_name(int32_t id);
// Ids joined by single spaces, through symbol_name: {5, 9, 2} -> "5 9 <eos>".
std::string symbols_to_string(const std::vector<int32_t>& ids);
// "5 9 3 17 4" -> {5, 9, 3, 17, 4}. Separators: whitespace or commas. Throws ValueError
// naming every token that is not a number in 3..31, and on an input with no symbols:
//   symbols outside the vocabulary (valid: 3..31): '40', 'x'
std::vector<int32_t> parse_symbols(const std::string& text);

}  // namespace attn::data
