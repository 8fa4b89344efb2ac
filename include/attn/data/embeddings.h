#pragma once
// Pretrained word vectors (`attn train --task sst2 --embeddings FILE`, docs/data.md).
// Formats, told apart by the file itself:
//   word2vec text / fastText .vec   a header line "<words> <dims>", then "<word> <v1> ... <vD>"
//   GloVe text                      no header: "<word> <v1> ... <vD>" from the first line
//   word2vec binary (name *.bin)    the header line, then per word "<word> " and D
//                                   little-endian float32 (a newline may precede a word)
// Any of them may be gzip-compressed (read through zlib). A GloVe 840B line whose word holds
// spaces has more than D + 1 fields: its word is everything before the last D.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace attn::data {

struct WordVectors {
  std::string format;  // "word2vec binary", "word2vec text / fastText .vec", "GloVe text"
  int64_t dim = 0;
  int64_t file_words = 0;  // words in the file
  // The vectors of the words asked for that the file has (all, when no set was given).
  std::unordered_map<std::string, std::vector<float>> vectors;
};

// Parses word vectors from `bytes` (the file's decompressed content); `name` is used in
// messages and picks the binary format when it ends in ".bin" or ".bin.gz". Keeps only the
// words in `wanted` unless it is null. ValueError "<name>:<line>: ..." for a malformed
// file: a header that is not two positive counts or whose word count the file does not
// have, a line with fewer or more values than the dimension, a value that is not a finite
// number, a word seen twice, a binary file cut short, a file without any vector.
WordVectors parse_word_vectors(std::string_view bytes, const std::string& name,
                               const std::unordered_set<std::string>* wanted = nullptr);

// The same for the file at `path` (plain or gzip); IoError when it cannot be read.
WordVectors read_word_vectors(const std::string& path, const std::unordered_set<std::string>* wanted = nullptr);

}  // namespace attn::data
