#pragma once
// Parallel corpora for translation (Multi30k layout: <data_dir>/raw/<split>.<lang>.gz, line i
// of one language aligned with line i of the other), their subword encoding, and batching:
// token-budget batches for training (as fairseq / OpenNMT) and length-sorted batches for
// evaluation.
#include <cstdint>
#include <string>
#include <vector>

#include "attn/data/subword.h"
#include "attn/data/tasks.h"

namespace attn::data {

struct ParallelCorpus {
  std::vector<std::string> src, tgt;  // aligned lines, src.size() == tgt.size()
};

// The split names load_parallel accepts besides raw file names: "train", "val", "test2016"
// (test_2016_flickr), "test2017" (test_2017_flickr), "test2018" (test_2018_flickr),
// "mscoco2017" (test_2017_mscoco).
std::string parallel_split_names();
// The file stem of a split: an alias is resolved, any other name is returned unchanged.
std::string parallel_split_file(const std::string& split);

// Reads <data_dir>/raw/<file>.<src_lang>.gz and <file>.<tgt_lang>.gz (file from
// parallel_split_file(split)), at most `limit` pairs (0 = all). A side not there is read from
// <data_dir>/<file>.<lang>, plain or .gz (a user's corpus: train.article and train.summary).
// Throws IoError naming the missing file and listing the valid splits, ValueError when the
// two sides' line counts differ, the files are empty or limit < 0.
ParallelCorpus load_parallel(const std::string& data_dir, const std::string& split, const std::string& src_lang,
                             const std::string& tgt_lang, int64_t limit = 0);

// The corpora a translation model is trained on: Multi30k's layout (<data>/raw/<file>.<lang>.gz;
// also a user's <split>.<lang> files, --task summarize) or Tatoeba's fra.txt.gz (tatoeba.h). A
// translation checkpoint records which ("corpus", absent for Multi30k), so `attn eval` reads
// the same corpus again.
enum class Corpus { multi30k, tatoeba };
const char* to_string(Corpus corpus);
Corpus parse_corpus(const std::string& name);  // ValueError naming the valid names

// The corpus that --data DIR serves for a language pair, and its folder. DIR may be the
// corpus's folder (multi30k/, tatoeba-fra-eng/) or the one holding them (../shared/data).
// Tatoeba when DIR holds fra.txt.gz but no Multi30k, or holds both and the pair is fr-en or
// en-fr (Multi30k's French: --data DIR/multi30k); Multi30k otherwise. ValueError for a pair
// that Tatoeba-only DIR does not have, naming the pairs it has.
struct CorpusFolder {
  Corpus corpus = Corpus::multi30k;
  std::string dir;
};
CorpusFolder find_corpus(const std::string& data, const std::string& src_lang, const std::string& tgt_lang);
// The folder of `corpus` in --data DIR: DIR/multi30k or DIR/tatoeba-fra-eng when there, else DIR.
std::string corpus_folder(Corpus corpus, const std::string& data);
// One split of `corpus` under --data DIR (corpus_folder): load_parallel or load_tatoeba.
ParallelCorpus load_corpus(Corpus corpus, const std::string& data, const std::string& split,
                           const std::string& src_lang, const std::string& tgt_lang, int64_t limit = 0);

struct EncodedPair {
  std::vector<int32_t> src, tgt;  // piece ids, no BOS/EOS, never empty
  // The pointer-generator's extended ids (models/pointer.h; encode_parallel with_oovs): the
  // source's unknown pieces as V + k, the target's that the source holds likewise, and the
  // pieces' text. Empty otherwise.
  std::vector<int32_t> src_ext = {}, tgt_ext = {};  // default initialisers: brace-initialised pairs may leave these out
  std::vector<std::string> oovs = {};
};
struct EncodedCorpus {
  std::vector<EncodedPair> pairs;
  int64_t truncated = 0;  // pairs with a side cut to max_len pieces
};

// Encodes every pair; a side longer than max_len pieces is cut to its first max_len pieces
// (counted once per pair in `truncated`); an empty side becomes one UNK so no row is empty.
// ValueError when max_len < 1 or the corpus sides differ in length. with_oovs: also the
// pointer's extended ids (one shared model: src_model and tgt_model must be the same).
EncodedCorpus encode_parallel(const ParallelCorpus& corpus, const SubwordModel& src_model,
                              const SubwordModel& tgt_model, int max_len, bool with_oovs = false);
// The pieces of `text` (at most max_len) with the pointer's extended ids: SourceOovs's ids
// and OOV texts (the unknown pieces' surface text).
struct EncodedOovs {
  std::vector<int32_t> ids, ext;
  std::vector<std::string> pieces, oovs;
};
EncodedOovs encode_with_oovs(const SubwordModel& model, const std::string& text, size_t max_len);

// The data::Batch of the pairs at `indices`, in that order:
//   src (B, S) PAD after each source; src_lengths (B); tgt_in (B, T) = BOS + tgt;
//   tgt_out (B, T) = tgt + EOS; tgt_lengths (B) = |tgt| + 1; T = longest target + 1;
//   with extended ids (encode_parallel with_oovs), src_ext, tgt_out_ext and extended_vocab
//   for a vocabulary of `vocab` pieces.
// ValueError on no indices, an index outside the pairs, or an empty side.
Batch make_pair_batch(const std::vector<EncodedPair>& pairs, const std::vector<size_t>& indices, int64_t vocab = 0);

// Token-budget batches over every pair index, each exactly once: shuffle (seeded by (seed,
// epoch)), sort within chunks of ~100 batches by (src length, tgt length), cut into batches
// whose padded size rows * (max src + max tgt + 1) is at most max_tokens and whose rows are at
// most max_sentences, then shuffle the batch order. A pair too long for max_tokens on its own
// forms a batch of one. The same (pairs, max_tokens, max_sentences, seed, epoch) give the same
// batches on every platform. ValueError when max_tokens < 1 or max_sentences < 1.
std::vector<std::vector<size_t>> token_batches(const std::vector<EncodedPair>& pairs, int64_t max_tokens,
                                               int max_sentences, uint64_t seed, int64_t epoch);
// The same over rows given by their lengths alone: speech (src: frames, tgt: characters).
struct RowLengths {
  size_t src = 0, tgt = 0;
};
std::vector<std::vector<size_t>> token_batches(const std::vector<RowLengths>& rows, int64_t max_tokens,
                                               int max_sentences, uint64_t seed, int64_t epoch);
// The lengths of each pair's source and target.
std::vector<RowLengths> pair_lengths(const std::vector<EncodedPair>& pairs);

// Fixed-order evaluation batches: the indices of `sources` sorted by length (ascending,
// ties in index order), cut into groups of at most `batch`. Every index appears once, so
// outputs can be written back to their input position. ValueError when batch < 1.
std::vector<std::vector<size_t>> sorted_batches(const std::vector<std::vector<int32_t>>& sources, int batch);

}  // namespace attn::data
