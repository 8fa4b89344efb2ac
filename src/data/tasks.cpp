#include "attn/data/tasks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "attn/enum_names.h"

namespace attn::data {

namespace {

bool is_content_symbol(int32_t id) { return id >= kFirstSymbol && id < kVocabSize; }

}  // namespace

namespace {

constexpr EnumName<TaskKind> kTaskNames[] = {
    {TaskKind::copy, "copy"}, {TaskKind::reverse, "reverse"}, {TaskKind::sort, "sort"}};

}  // namespace

TaskKind parse_task(const std::string& name) {
  if (const std::optional<TaskKind> kind = enum_from_name(kTaskNames, name)) return *kind;
  throw ValueError(fmt::format("unknown task '{}' (valid: {})", name, task_names()));
}

const char* task_name(TaskKind kind) { return enum_name(kTaskNames, kind, "?"); }

std::string task_names() { return enum_name_list(kTaskNames); }

std::vector<int32_t> task_target(TaskKind kind, const std::vector<int32_t>& src) {
  for (size_t i = 0; i < src.size(); ++i) {
    if (!is_content_symbol(src[i])) {
      throw ValueError(fmt::format("task_target: source symbol {} at position {} is not a content symbol ({}..{})",
                                   src[i], i, kFirstSymbol, kVocabSize - 1));
    }
  }
  std::vector<int32_t> target = src;
  switch (kind) {
    case TaskKind::copy:
      break;
    case TaskKind::reverse:
      std::reverse(target.begin(), target.end());
      break;
    case TaskKind::sort:
      std::sort(target.begin(), target.end());
      break;
  }
  return target;
}

Batch make_batch(TaskKind kind, const std::vector<std::vector<int32_t>>& sources) {
  if (sources.empty()) throw ValueError("make_batch: no sources (batch size 0)");
  std::vector<std::vector<int32_t>> targets;
  targets.reserve(sources.size());
  for (size_t b = 0; b < sources.size(); ++b) {
    if (sources[b].empty()) throw ValueError(fmt::format("make_batch: source {} is empty", b));
    targets.push_back(task_target(kind, sources[b]));
  }
  return models::pack_pairs({sources.begin(), sources.end()}, {targets.begin(), targets.end()});
}

TaskGenerator::TaskGenerator(TaskKind kind, int min_len, int max_len, uint64_t seed)
    : kind_(kind), min_len_(min_len), max_len_(max_len), rng_(seed) {
  if (min_len < 1) throw ValueError(fmt::format("task generator: min length {} must be at least 1", min_len));
  if (min_len > max_len) {
    throw ValueError(fmt::format("task generator: min length {} is greater than max length {}", min_len, max_len));
  }
}

std::vector<int32_t> TaskGenerator::random_source(int length) {
  if (length < 1) throw ValueError(fmt::format("task generator: sequence length {} must be at least 1", length));
  std::vector<int32_t> source(static_cast<size_t>(length));
  for (auto& id : source) id = kFirstSymbol + static_cast<int32_t>(rng_.below(kNumSymbols));
  return source;
}

std::vector<std::vector<int32_t>> TaskGenerator::random_sources(int count) {
  if (count < 1) throw ValueError(fmt::format("task generator: batch size {} must be at least 1", count));
  const uint64_t span = static_cast<uint64_t>(max_len_ - min_len_) + 1;
  std::vector<std::vector<int32_t>> sources;
  sources.reserve(static_cast<size_t>(count));
  for (int b = 0; b < count; ++b) {
    const int length = min_len_ + static_cast<int>(rng_.below(span));
    sources.push_back(random_source(length));
  }
  return sources;
}

Batch TaskGenerator::next(int batch_size) { return make_batch(kind_, random_sources(batch_size)); }

Batch TaskGenerator::fixed_length(int batch_size, int length) {
  if (batch_size < 1) throw ValueError(fmt::format("task generator: batch size {} must be at least 1", batch_size));
  if (length < 1) throw ValueError(fmt::format("task generator: sequence length {} must be at least 1", length));
  std::vector<std::vector<int32_t>> sources;
  sources.reserve(static_cast<size_t>(batch_size));
  for (int b = 0; b < batch_size; ++b) sources.push_back(random_source(length));
  return make_batch(kind_, sources);
}

std::string symbol_name(int32_t id) {
  switch (id) {
    case kPad:
      return "<pad>";
    case kBos:
      return "<bos>";
    case kEos:
      return "<eos>";
    default:
      break;
  }
  if (is_content_symbol(id)) return std::to_string(id);
  return fmt::format("<?{}>", id);
}

std::string symbols_to_string(const std::vector<int32_t>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out += ' ';
    out += symbol_name(ids[i]);
  }
  return out;
}

std::vector<int32_t> parse_symbols(const std::string& text) {
  std::vector<int32_t> ids;
  std::vector<std::string> bad;
  size_t i = 0;
  while (i < text.size()) {
    const auto is_sep = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0 || c == ','; };
    while (i < text.size() && is_sep(text[i])) ++i;
    if (i >= text.size()) break;
    size_t j = i;
    while (j < text.size() && !is_sep(text[j])) ++j;
    const std::string token = text.substr(i, j - i);
    i = j;
    int value = 0;
    const char* first = token.data();
    const char* last = token.data() + token.size();
    const auto [ptr, ec] = std::from_chars(first, last, value);
    if (ec != std::errc() || ptr != last || !is_content_symbol(value)) {
      bad.push_back("'" + token + "'");
    } else {
      ids.push_back(value);
    }
  }
  if (!bad.empty()) {
    throw ValueError(fmt::format("symbols outside the vocabulary (valid: {}..{}): {}", kFirstSymbol, kVocabSize - 1,
                                 fmt::join(bad, ", ")));
  }
  if (ids.empty()) {
    throw ValueError(
        fmt::format("no symbols in '{}' (expected numbers {}..{} separated by spaces, e.g. \"5 9 3 17 4\")", text,
                    kFirstSymbol, kVocabSize - 1));
  }
  return ids;
}

}  // namespace attn::data
