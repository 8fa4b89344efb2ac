// The pretrained word-vector readers (data/embeddings.h): each format from small files the
// test writes, and the malformed files (a short line, a NaN, a duplicate word, a header with
// the wrong count) as one-line errors naming the file and line.
#include "attn/data/embeddings.h"

#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "attn/error.h"
#include "test_support.h"

namespace attn::data {
namespace {

std::string float_bytes(std::initializer_list<float> values) {
  std::string out;
  for (float v : values) out.append(reinterpret_cast<const char*>(&v), sizeof v);
  return out;
}

void expect_vector(const WordVectors& v, const std::string& word, std::vector<float> want) {
  const auto it = v.vectors.find(word);
  ASSERT_NE(it, v.vectors.end()) << "no vector for '" << word << "'";
  EXPECT_EQ(it->second, want) << "'" << word << "'";
}

template <class Fn>
void expect_value_error(Fn&& fn, const std::string& fragment) {
  try {
    fn();
    ADD_FAILURE() << "no ValueError; expected one containing '" << fragment << "'";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "not one line: " << e.what();
  }
}

TEST(WordVectors, FastTextVecWithHeaderAndTrailingSpaces) {
  const std::string path = attn::testing::temp_file("wiki.vec", "3 2\nthe 0.5 -1 \n, 2e-1 3 \nmovie 1 2 \n");
  const WordVectors v = read_word_vectors(path);
  EXPECT_EQ(v.format, "word2vec text / fastText .vec");
  EXPECT_EQ(v.dim, 2);
  EXPECT_EQ(v.file_words, 3);
  expect_vector(v, "the", {0.5f, -1.0f});
  expect_vector(v, ",", {0.2f, 3.0f});
}

TEST(WordVectors, GloveWithoutHeaderKeepsOnlyWantedAndWordsWithSpaces) {
  const std::string path = attn::testing::temp_file("glove.txt", "the 1 2 3\nmovie 4 5 6\n. . . 7 8 9\nbleak 0 0 1\n");
  const std::unordered_set<std::string> wanted = {"movie", ". . .", "absent"};
  const WordVectors v = read_word_vectors(path, &wanted);
  EXPECT_EQ(v.format, "GloVe text");
  EXPECT_EQ(v.dim, 3);
  EXPECT_EQ(v.file_words, 4);
  EXPECT_EQ(v.vectors.size(), 2u);
  expect_vector(v, "movie", {4, 5, 6});
  expect_vector(v, ". . .", {7, 8, 9});
}

TEST(WordVectors, Word2VecBinaryAndGzip) {
  const std::string bytes = "2 3\nthe " + float_bytes({1.5f, -2, 0}) + "\nmovie " + float_bytes({3, 4, 5}) + "\n";
  const WordVectors v = parse_word_vectors(bytes, "vectors.bin");
  EXPECT_EQ(v.format, "word2vec binary");
  EXPECT_EQ(v.dim, 3);
  expect_vector(v, "the", {1.5f, -2, 0});
  expect_vector(v, "movie", {3, 4, 5});
  // The same text file gzip-compressed reads the same.
  const std::string path = attn::testing::temp_file("g.txt.gz", "");
  gzFile gz = gzopen(path.c_str(), "wb");
  const std::string text = "the 1 2\n";
  gzwrite(gz, text.data(), static_cast<unsigned>(text.size()));
  gzclose(gz);
  expect_vector(read_word_vectors(path), "the", {1, 2});
}

TEST(WordVectors, MalformedFilesAreOneLineErrors) {
  expect_value_error([] { parse_word_vectors("2 3\nthe 1 2 3\nmovie 1 2\n", "short.vec"); },
                     "short.vec:3: 'movie' has 2 values, expected 3");
  expect_value_error([] { parse_word_vectors("the 1 2\nmovie nan 2\n", "nan.txt"); },
                     "nan.txt:2: the vector of 'movie' has a value that is not finite");
  expect_value_error([] { parse_word_vectors("the 1 2\nmovie 1 x\n", "text.txt"); },
                     "'x' in the vector of 'movie' is not a number");
  expect_value_error([] { parse_word_vectors("the 1 2\nmovie 3 4\nthe 5 6\n", "dup.txt"); },
                     "dup.txt:3: the word 'the' appears twice (first at 1)");
  expect_value_error([] { parse_word_vectors("3 2\nthe 1 2\nmovie 3 4\n", "count.vec"); },
                     "count.vec: the header says 3 words, the file has 2");
  expect_value_error([] { parse_word_vectors("0 2\n", "zero.vec"); }, "two positive counts");
  expect_value_error([] { parse_word_vectors("\n\n", "empty.txt"); }, "no word vectors");
  expect_value_error([] { parse_word_vectors("3 2\nthe " + float_bytes({1, 2}), "cut.bin"); }, "word 2 of 3");
  expect_value_error([] { parse_word_vectors("1 2\nthe " + float_bytes({1}), "cut.bin"); }, "ends inside its vector");
  const float inf = std::numeric_limits<float>::infinity();
  expect_value_error([&] { parse_word_vectors("1 1\nthe " + float_bytes({inf}), "inf.bin"); }, "not finite");
}

}  // namespace
}  // namespace attn::data
