#include "attn/data/parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <utility>

#include "attn/data/tatoeba.h"
#include "attn/data/text.h"
#include "attn/error.h"
#include "attn/models/pointer.h"
#include "attn/random.h"

namespace attn::data {
namespace {

struct SplitAlias {
  const char* name;
  const char* file;
};
constexpr SplitAlias kSplits[] = {
    {"train", "train"},
    {"val", "val"},
    {"test2016", "test_2016_flickr"},
    {"test2017", "test_2017_flickr"},
    {"test2018", "test_2018_flickr"},
    {"mscoco2017", "test_2017_mscoco"},
};

// Fisher-Yates with attn's own generator (std::shuffle is implementation-defined).
void shuffle_indices(std::vector<size_t>& v, Rng& rng) {
  for (size_t i = v.size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(rng.below(i));
    std::swap(v[i - 1], v[j]);
  }
}

}  // namespace

std::string parallel_split_names() {
  std::string names;
  for (const auto& s : kSplits) {
    if (!names.empty()) names += ", ";
    names += s.name;
  }
  return names;
}

std::string parallel_split_file(const std::string& split) {
  for (const auto& s : kSplits) {
    if (split == s.name) return s.file;
  }
  return split;
}

namespace {

// The file of one side: Multi30k's <data_dir>/raw/<stem>.<lang>.gz, else <data_dir>/<stem>.<lang>
// or .gz (a user's own corpus: train.article, val.summary.gz, ...); "" when there is none.
std::string parallel_side_path(const std::string& data_dir, const std::string& stem, const std::string& lang) {
  for (const std::string& path : {data_dir + "/raw/" + stem + "." + lang + ".gz", data_dir + "/" + stem + "." + lang,
                                  data_dir + "/" + stem + "." + lang + ".gz"})
    if (file_exists(path)) return path;
  return "";
}

}  // namespace

ParallelCorpus load_parallel(const std::string& data_dir, const std::string& split, const std::string& src_lang,
                             const std::string& tgt_lang, int64_t limit) {
  if (limit < 0) throw ValueError(fmt::format("load_parallel: limit must be >= 0 (0 = all), got {}", limit));
  const std::string stem = parallel_split_file(split);
  const std::string src_path = parallel_side_path(data_dir, stem, src_lang);
  const std::string tgt_path = parallel_side_path(data_dir, stem, tgt_lang);
  for (const auto& [path, lang] : {std::pair{src_path, src_lang}, std::pair{tgt_path, tgt_lang}}) {
    if (path.empty()) {
      throw IoError(
          fmt::format("load_parallel: no file '{}/raw/{}.{}.gz' for split '{}' (valid splits: {}; or a file "
                      "stem under <data>/raw/, e.g. test_2016_flickr; or {}/{}.{}, plain or .gz)",
                      data_dir, stem, lang, split, parallel_split_names(), data_dir, stem, lang));
    }
  }
  ParallelCorpus corpus;
  corpus.src = read_lines(src_path);
  corpus.tgt = read_lines(tgt_path);
  if (corpus.src.size() != corpus.tgt.size()) {
    throw ValueError(fmt::format("load_parallel: '{}' has {} lines but '{}' has {}: the sides are not aligned",
                                 src_path, corpus.src.size(), tgt_path, corpus.tgt.size()));
  }
  if (corpus.src.empty()) throw ValueError(fmt::format("load_parallel: '{}' has no lines", src_path));
  if (limit > 0 && static_cast<int64_t>(corpus.src.size()) > limit) {
    corpus.src.resize(static_cast<size_t>(limit));
    corpus.tgt.resize(static_cast<size_t>(limit));
  }
  return corpus;
}

const char* to_string(Corpus corpus) { return corpus == Corpus::tatoeba ? "tatoeba" : "multi30k"; }

Corpus parse_corpus(const std::string& name) {
  if (name == "multi30k") return Corpus::multi30k;
  if (name == "tatoeba") return Corpus::tatoeba;
  throw ValueError(fmt::format("unknown corpus '{}' (valid: multi30k, tatoeba)", name));
}

namespace {

bool holds_multi30k(const std::string& data) {
  namespace fs = std::filesystem;
  return fs::is_directory(fs::path(data) / "raw") || fs::is_directory(fs::path(data) / "multi30k" / "raw");
}

}  // namespace

std::string corpus_folder(Corpus corpus, const std::string& data) {
  namespace fs = std::filesystem;
  const fs::path inside = fs::path(data) / (corpus == Corpus::tatoeba ? "tatoeba-fra-eng" : "multi30k");
  const bool there =
      corpus == Corpus::tatoeba ? file_exists((inside / "fra.txt.gz").string()) : fs::is_directory(inside / "raw");
  return there ? inside.string() : data;
}

CorpusFolder find_corpus(const std::string& data, const std::string& src_lang, const std::string& tgt_lang) {
  const bool tatoeba = !tatoeba_file(data).empty(), multi30k = holds_multi30k(data);
  if (tatoeba && !multi30k && !is_tatoeba_pair(src_lang, tgt_lang))
    throw ValueError(
        fmt::format("{} holds Tatoeba's fra.txt.gz, which has no {}-{} pairs (supported: {}; Multi30k "
                    "has de, en, fr, cs)",
                    data, src_lang, tgt_lang, kTatoebaPairs));
  const Corpus corpus =
      tatoeba && (!multi30k || is_tatoeba_pair(src_lang, tgt_lang)) ? Corpus::tatoeba : Corpus::multi30k;
  return {corpus, corpus_folder(corpus, data)};
}

ParallelCorpus load_corpus(Corpus corpus, const std::string& data, const std::string& split,
                           const std::string& src_lang, const std::string& tgt_lang, int64_t limit) {
  const std::string dir = corpus_folder(corpus, data);
  if (corpus == Corpus::tatoeba) return load_tatoeba(require_tatoeba_file(dir), split, src_lang, tgt_lang, limit);
  return load_parallel(dir, split, src_lang, tgt_lang, limit);
}

EncodedOovs encode_with_oovs(const SubwordModel& model, const std::string& text, size_t max_len) {
  EncodedOovs out;
  out.ids = model.encode(text);
  out.pieces = model.encode_surfaces(text);  // the same encoding: an unknown piece keeps its surface text
  if (out.pieces.size() != out.ids.size())
    throw ValueError(fmt::format("encode_with_oovs: {} pieces but {} ids", out.pieces.size(), out.ids.size()));
  if (out.ids.size() > max_len) {
    out.ids.resize(max_len);
    out.pieces.resize(max_len);
  }
  models::SourceOovs s = models::extend_source(out.pieces, out.ids, kSubwordUnk, model.vocab_size());
  out.ext = std::move(s.ids);
  out.oovs = std::move(s.oovs);
  return out;
}

EncodedCorpus encode_parallel(const ParallelCorpus& corpus, const SubwordModel& src_model,
                              const SubwordModel& tgt_model, int max_len, bool with_oovs) {
  if (max_len < 1) throw ValueError(fmt::format("encode_parallel: max_len must be >= 1, got {}", max_len));
  if (corpus.src.size() != corpus.tgt.size()) {
    throw ValueError(
        fmt::format("encode_parallel: {} source lines but {} target lines", corpus.src.size(), corpus.tgt.size()));
  }
  EncodedCorpus out;
  out.pairs.resize(corpus.src.size());
  const size_t limit = static_cast<size_t>(max_len);
  for (size_t i = 0; i < corpus.src.size(); ++i) {
    EncodedPair& pair = out.pairs[i];
    if (with_oovs) {
      EncodedOovs s = encode_with_oovs(src_model, corpus.src[i], limit),
                  t = encode_with_oovs(tgt_model, corpus.tgt[i], limit);
      pair.tgt_ext = models::extend_target(t.pieces, t.ids, kSubwordUnk, tgt_model.vocab_size(), s.oovs);
      pair.src_ext = std::move(s.ext);
      pair.oovs = std::move(s.oovs);
      // An empty side becomes one UNK below: no OOV of its own.
      if (pair.src_ext.empty()) pair.src_ext.push_back(kSubwordUnk);
      if (pair.tgt_ext.empty()) pair.tgt_ext.push_back(kSubwordUnk);
    }
    pair.src = src_model.encode(corpus.src[i]);
    pair.tgt = tgt_model.encode(corpus.tgt[i]);
    bool cut = false;
    for (auto* side : {&pair.src, &pair.tgt}) {
      if (side->size() > limit) {
        side->resize(limit);
        cut = true;
      }
      if (side->empty()) side->push_back(kSubwordUnk);
    }
    if (cut) ++out.truncated;
  }
  return out;
}

Batch make_pair_batch(const std::vector<EncodedPair>& pairs, const std::vector<size_t>& indices, int64_t vocab) {
  if (indices.empty()) throw ValueError("make_pair_batch: no indices (batch size 0)");
  models::IdRows sources, targets;
  for (const size_t i : indices) {
    if (i >= pairs.size()) {
      throw ValueError(fmt::format("make_pair_batch: index {} outside the {} pairs", i, pairs.size()));
    }
    if (pairs[i].src.empty() || pairs[i].tgt.empty()) {
      throw ValueError(
          fmt::format("make_pair_batch: pair {} has an empty {}", i, pairs[i].src.empty() ? "source" : "target"));
    }
    sources.emplace_back(pairs[i].src);
    targets.emplace_back(pairs[i].tgt);
  }
  Batch batch = models::pack_pairs(sources, targets);
  if (!pairs[indices.front()].src_ext.empty()) {  // encoded with_oovs: the pointer's extended ids
    if (vocab < 1) throw ValueError("make_pair_batch: pairs with extended ids need the vocabulary size");
    models::IdRows sources_ext, targets_ext;
    std::vector<std::vector<std::string>> oovs;
    for (const size_t i : indices) {
      sources_ext.emplace_back(pairs[i].src_ext);
      targets_ext.emplace_back(pairs[i].tgt_ext);
      oovs.push_back(pairs[i].oovs);
    }
    models::add_extended_ids(batch, sources_ext, targets_ext, oovs, vocab);
  }
  return batch;
}

std::vector<std::vector<size_t>> token_batches(const std::vector<EncodedPair>& pairs, int64_t max_tokens,
                                               int max_sentences, uint64_t seed, int64_t epoch) {
  return token_batches(pair_lengths(pairs), max_tokens, max_sentences, seed, epoch);
}

std::vector<RowLengths> pair_lengths(const std::vector<EncodedPair>& pairs) {
  std::vector<RowLengths> lengths;
  lengths.reserve(pairs.size());
  for (const auto& p : pairs) lengths.push_back({p.src.size(), p.tgt.size()});
  return lengths;
}

std::vector<std::vector<size_t>> token_batches(const std::vector<RowLengths>& pairs, int64_t max_tokens,
                                               int max_sentences, uint64_t seed, int64_t epoch) {
  if (max_tokens < 1) throw ValueError(fmt::format("token_batches: max_tokens must be >= 1, got {}", max_tokens));
  if (max_sentences < 1) {
    throw ValueError(fmt::format("token_batches: max_sentences must be >= 1, got {}", max_sentences));
  }
  std::vector<std::vector<size_t>> batches;
  const size_t n = pairs.size();
  if (n == 0) return batches;

  Rng rng(splitmix64(seed) ^ splitmix64(0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(epoch)));
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  shuffle_indices(order, rng);

  // Chunks of about 100 batches: long enough that sorting makes batches of similar lengths
  // (little padding), short enough that batches still differ from epoch to epoch.
  double mean_cost = 0.0;  // padded tokens of one row on its own: |src| + |tgt| + 1
  for (const auto& p : pairs) mean_cost += static_cast<double>(p.src + p.tgt + 1);
  mean_cost /= static_cast<double>(n);
  const double rows = std::clamp(static_cast<double>(max_tokens) / mean_cost, 1.0, static_cast<double>(max_sentences));
  const size_t chunk = std::max<size_t>(1, static_cast<size_t>(100.0 * rows));

  for (size_t begin = 0; begin < n; begin += chunk) {
    const size_t end = std::min(n, begin + chunk);
    std::stable_sort(order.begin() + static_cast<std::ptrdiff_t>(begin),
                     order.begin() + static_cast<std::ptrdiff_t>(end), [&](size_t a, size_t b) {
                       const auto la = std::make_pair(pairs[a].src, pairs[a].tgt);
                       const auto lb = std::make_pair(pairs[b].src, pairs[b].tgt);
                       return la < lb;
                     });
    std::vector<size_t> current;
    size_t max_src = 0;
    size_t max_tgt = 0;
    for (size_t k = begin; k < end; ++k) {
      const size_t i = order[k];
      const size_t s = std::max(max_src, pairs[i].src);
      const size_t t = std::max(max_tgt, pairs[i].tgt);
      const int64_t cost = static_cast<int64_t>((current.size() + 1) * (s + t + 1));
      if (!current.empty() && (cost > max_tokens || static_cast<int64_t>(current.size()) >= max_sentences)) {
        batches.push_back(std::move(current));
        current.clear();
        max_src = pairs[i].src;
        max_tgt = pairs[i].tgt;
      } else {
        max_src = s;
        max_tgt = t;
      }
      current.push_back(i);
    }
    if (!current.empty()) batches.push_back(std::move(current));
  }

  // Shuffle the batch order (same generator, so still a function of (seed, epoch)).
  std::vector<size_t> perm(batches.size());
  std::iota(perm.begin(), perm.end(), size_t{0});
  shuffle_indices(perm, rng);
  std::vector<std::vector<size_t>> shuffled;
  shuffled.reserve(batches.size());
  for (const size_t p : perm) shuffled.push_back(std::move(batches[p]));
  return shuffled;
}

std::vector<std::vector<size_t>> sorted_batches(const std::vector<std::vector<int32_t>>& sources, int batch) {
  if (batch < 1) throw ValueError(fmt::format("sorted_batches: batch must be >= 1, got {}", batch));
  std::vector<size_t> order(sources.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sources[a].size() < sources[b].size(); });
  std::vector<std::vector<size_t>> batches;
  const size_t step = static_cast<size_t>(batch);
  for (size_t begin = 0; begin < order.size(); begin += step) {
    const size_t end = std::min(order.size(), begin + step);
    batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(begin),
                         order.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return batches;
}

}  // namespace attn::data
