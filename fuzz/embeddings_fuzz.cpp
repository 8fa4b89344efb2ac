// libFuzzer target: the pretrained word-vector readers (data/embeddings.h) on arbitrary
// bytes, as text (word2vec text, fastText .vec, GloVe) and as word2vec binary, and through
// the file reader (plain or gzip). Beyond "no crash", it checks what they promise: every
// vector kept has the file's dimension and finite values, and the words kept are the ones
// asked for.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_set>

#include "attn/data/embeddings.h"
#include "fuzz_support.h"

using attn::fuzz::require;

namespace {

void check(const attn::data::WordVectors& v, const std::unordered_set<std::string>* wanted) {
  require(v.dim >= 1, "a dimension below 1 accepted");
  require(v.file_words >= 1, "a file without words accepted");
  for (const auto& [word, vector] : v.vectors) {
    require(!wanted || wanted->contains(word), "a word not asked for was kept");
    require(static_cast<int64_t>(vector.size()) == v.dim, "a vector of another length than the dimension");
    for (float x : vector) require(std::isfinite(x), "a value that is not finite");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::unordered_set<std::string> wanted = {"the", "a", ",", "movie"};
  for (const char* name : {"vectors.vec", "vectors.bin"}) {
    attn::fuzz::expect_only_attn_errors([&] { check(attn::data::parse_word_vectors(bytes, name), nullptr); });
    attn::fuzz::expect_only_attn_errors([&] { check(attn::data::parse_word_vectors(bytes, name, &wanted), &wanted); });
  }
  const std::string path = attn::fuzz::scratch_path("vectors.txt.gz");  // plain or gzip by content
  attn::fuzz::write_file(path, data, size);
  attn::fuzz::expect_only_attn_errors([&] { check(attn::data::read_word_vectors(path, &wanted), &wanted); });
  return 0;
}
