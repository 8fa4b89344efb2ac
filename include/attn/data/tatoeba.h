#pragma once
// The Tatoeba / manythings.org sentence pairs (../shared/data/tatoeba-fra-eng/fra.txt.gz, SOURCE.md
// there): one reader for every user of the file (the character LM, the spoken sentences, the
// fr-en translation task), and the translation task's split.
//
//   for (const TatoebaPair& p : read_tatoeba(tatoeba_file(dir))) ... p.english, p.french
#include <cstdint>
#include <string>
#include <vector>

#include "attn/data/parallel.h"

namespace attn::data {

struct TatoebaPair {
  std::string english, french;
};

// <dir>/fra.txt.gz, else <dir>/tatoeba-fra-eng/fra.txt.gz (--data names the folder or the one
// holding it); "" when neither exists.
std::string tatoeba_file(const std::string& dir);
// The same, or IoError naming what was looked for.
std::string require_tatoeba_file(const std::string& dir);

// Every line of `path` (plain or gzip) as a pair, in file order, duplicates kept. A line is
// "English<TAB>French" or "English<TAB>French<TAB>attribution" (newer manythings releases);
// anything else (no tab, a fourth field, an empty side) is a ValueError "<path>:<line>: ...".
// IoError when the file cannot be read.
std::vector<TatoebaPair> read_tatoeba(const std::string& path);

// The translation split of a pair: FNV-1a (64-bit) of its *source* sentence's UTF-8 bytes,
// modulo 100: 0-1 test (2 %), 2-3 dev (2 %), the rest train. Every pair with the same source
// sentence lands in the same split, on every platform (docs/data.md has the counts).
enum class TatoebaSplit { train, dev, test };
TatoebaSplit tatoeba_split(const std::string& source);

// The languages of the file and the pairs it serves: fr-en and en-fr.
inline constexpr const char* kTatoebaPairs = "fr-en, en-fr";
bool is_tatoeba_pair(const std::string& src_lang, const std::string& tgt_lang);

// One split of the file as a parallel corpus: split "train", "dev" (or "val", the trainer's
// name for it) or "test"; the pairs of that split in file order, an exact duplicate of an
// earlier pair left out. A `limit` L > 0 below the split's N pairs keeps pairs i * N / L (i < L),
// spread over the lengths: the file is sorted by length, so the first L would be the shortest.
// ValueError for another split or pair (naming the valid ones), or limit < 0.
ParallelCorpus load_tatoeba(const std::string& path, const std::string& split, const std::string& src_lang,
                            const std::string& tgt_lang, int64_t limit = 0);

}  // namespace attn::data
