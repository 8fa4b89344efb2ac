#include "attn/data/tatoeba.h"

#include <fmt/format.h>

#include <filesystem>
#include <string_view>
#include <unordered_set>

#include "attn/data/cmudict.h"  // fnv1a64
#include "attn/data/text.h"
#include "attn/error.h"

namespace attn::data {
namespace fs = std::filesystem;

std::string tatoeba_file(const std::string& dir) {
  for (const fs::path& path : {fs::path(dir) / "fra.txt.gz", fs::path(dir) / "tatoeba-fra-eng" / "fra.txt.gz"})
    if (file_exists(path.string())) return path.string();
  return "";
}

std::string require_tatoeba_file(const std::string& dir) {
  const std::string path = tatoeba_file(dir);
  if (path.empty())
    throw IoError((fs::path(dir) / "fra.txt.gz").string() +
                  ": no such file (--data must be the tatoeba-fra-eng folder holding fra.txt.gz, or the folder holding "
                  "that)");
  return path;
}

std::vector<TatoebaPair> read_tatoeba(const std::string& path) {
  std::vector<TatoebaPair> pairs;
  size_t number = 0;
  for (const std::string& line : read_lines(path)) {
    ++number;
    const auto bad = [&](const char* what) {
      return ValueError(
          fmt::format("{}:{}: {} (expected English<TAB>French, optionally <TAB>attribution)", path, number, what));
    };
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) throw bad("no tab");
    const size_t end = line.find('\t', tab + 1);  // the attribution's tab, if any
    if (end != std::string::npos && line.find('\t', end + 1) != std::string::npos) throw bad("more than three fields");
    TatoebaPair pair{line.substr(0, tab),
                     line.substr(tab + 1, end == std::string::npos ? std::string::npos : end - tab - 1)};
    if (pair.english.empty()) throw bad("an empty English sentence");
    if (pair.french.empty()) throw bad("an empty French sentence");
    pairs.push_back(std::move(pair));
  }
  return pairs;
}

TatoebaSplit tatoeba_split(const std::string& source) {
  const uint64_t bucket = fnv1a64(source) % 100;
  return bucket < 2 ? TatoebaSplit::test : bucket < 4 ? TatoebaSplit::dev : TatoebaSplit::train;
}

bool is_tatoeba_pair(const std::string& src_lang, const std::string& tgt_lang) {
  return (src_lang == "fr" && tgt_lang == "en") || (src_lang == "en" && tgt_lang == "fr");
}

ParallelCorpus load_tatoeba(const std::string& path, const std::string& split, const std::string& src_lang,
                            const std::string& tgt_lang, int64_t limit) {
  if (limit < 0) throw ValueError(fmt::format("load_tatoeba: limit must be >= 0 (0 = all), got {}", limit));
  TatoebaSplit wanted = TatoebaSplit::train;
  if (split == "dev" || split == "val")
    wanted = TatoebaSplit::dev;
  else if (split == "test")
    wanted = TatoebaSplit::test;
  else if (split != "train")
    throw ValueError(fmt::format("unknown Tatoeba split '{}' (valid: train, dev, test)", split));
  if (!is_tatoeba_pair(src_lang, tgt_lang))
    throw ValueError(
        fmt::format("Tatoeba (fra.txt.gz) has no {}-{} pairs (supported: {})", src_lang, tgt_lang, kTatoebaPairs));
  const bool from_french = src_lang == "fr";
  ParallelCorpus corpus;
  std::unordered_set<std::string> seen;  // "English\tFrench" of the pairs kept
  for (TatoebaPair& p : read_tatoeba(path)) {
    std::string& source = from_french ? p.french : p.english;
    std::string& target = from_french ? p.english : p.french;
    if (tatoeba_split(source) != wanted || !seen.insert(p.english + '\t' + p.french).second) continue;
    corpus.src.push_back(std::move(source));
    corpus.tgt.push_back(std::move(target));
  }
  if (corpus.src.empty()) throw ValueError(fmt::format("{}: no pairs in the {} split", path, split));
  const size_t n = corpus.src.size();
  if (limit == 0 || static_cast<size_t>(limit) >= n) return corpus;
  // Pairs i * n / limit: spread over the file's lengths (the first `limit` would be the shortest).
  ParallelCorpus spread;
  for (size_t i = 0; i < static_cast<size_t>(limit); ++i) {
    const size_t k = i * n / static_cast<size_t>(limit);
    spread.src.push_back(std::move(corpus.src[k]));
    spread.tgt.push_back(std::move(corpus.tgt[k]));
  }
  return spread;
}

}  // namespace attn::data
