#include "attn/data/embeddings.h"

#include <unistd.h>
#include <zlib.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <memory>

#include "attn/data/text.h"
#include "attn/error.h"
#include "attn/io/input_file.h"

namespace attn::data {
namespace {

bool all_digits(std::string_view s) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// The words seen so far (a word twice is an error) and the vectors kept.
class Collector {
 public:
  Collector(const std::string& name, const std::unordered_set<std::string>* wanted, WordVectors& out)
      : name_(name), wanted_(wanted), out_(out) {}

  // `line` is for messages: a line number (text) or a word number (binary).
  float* add(std::string word, int64_t line, const std::string& where) {
    const auto [it, fresh] = seen_.emplace(word, line);
    if (!fresh)
      throw ValueError(where + ": the word '" + word + "' appears twice (first at " + std::to_string(it->second) + ")");
    ++out_.file_words;
    if (wanted_ && !wanted_->contains(word)) {
      scratch_.assign(static_cast<size_t>(out_.dim), 0.0f);
      return scratch_.data();
    }
    std::vector<float>& v = out_.vectors[std::move(word)];
    v.assign(static_cast<size_t>(out_.dim), 0.0f);
    return v.data();
  }

 private:
  const std::string& name_;
  const std::unordered_set<std::string>* wanted_;
  WordVectors& out_;
  std::unordered_map<std::string, int64_t> seen_;
  std::vector<float> scratch_;
};

void check_finite(float value, const std::string& where, const std::string& word) {
  if (!std::isfinite(value)) throw ValueError(where + ": the vector of '" + word + "' has a value that is not finite");
}

int64_t parse_count(std::string_view s) {
  int64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

void parse_text(std::string_view bytes, const std::string& name, const std::unordered_set<std::string>* wanted,
                WordVectors& out) {
  Collector collect(name, wanted, out);
  int64_t header_words = -1;
  int64_t line_no = 0;
  size_t pos = 0;
  while (pos < bytes.size()) {
    size_t end = bytes.find('\n', pos);
    if (end == std::string_view::npos) end = bytes.size();
    const std::string_view line = bytes.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    const std::vector<std::string_view> f = split_fields(line);
    if (f.empty()) continue;
    const std::string where = name + ":" + std::to_string(line_no);
    if (line_no == 1 && f.size() == 2 && all_digits(f[0]) && all_digits(f[1])) {
      header_words = parse_count(f[0]);
      out.dim = parse_count(f[1]);
      if (header_words < 1 || out.dim < 1)
        throw ValueError(where + ": the header must give two positive counts (words, dimensions), got '" +
                         std::string(line) + "'");
      out.format = "word2vec text / fastText .vec";
      continue;
    }
    if (f.size() < 2) throw ValueError(where + ": a word without a vector");
    if (out.dim == 0) {
      out.dim = static_cast<int64_t>(f.size()) - 1;
      out.format = "GloVe text";
    }
    const size_t D = static_cast<size_t>(out.dim);
    if (f.size() < D + 1)
      throw ValueError(where + ": '" + std::string(f[0]) + "' has " + std::to_string(f.size() - 1) +
                       " values, expected " + std::to_string(D));
    // A word with spaces (GloVe 840B has a few): everything before the last D fields.
    const size_t word_fields = f.size() - D;
    std::string word(f[0]);
    if (word_fields > 1) {
      if (out.format != "GloVe text")
        throw ValueError(where + ": '" + word + "' has " + std::to_string(f.size() - 1) + " values, expected " +
                         std::to_string(D));
      word = std::string(f[0].data(),
                         static_cast<size_t>(f[word_fields - 1].data() + f[word_fields - 1].size() - f[0].data()));
    }
    float* v = collect.add(word, line_no, where);
    for (size_t k = 0; k < D; ++k) {
      const std::string_view s = f[word_fields + k];
      float value = 0.0f;
      const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
      if (ec != std::errc() || ptr != s.data() + s.size())
        throw ValueError(where + ": '" + std::string(s) + "' in the vector of '" + word + "' is not a number");
      check_finite(value, where, word);
      v[k] = value;
    }
  }
  if (out.file_words == 0) throw ValueError(name + ": no word vectors in the file");
  if (header_words >= 0 && header_words != out.file_words)
    throw ValueError(name + ": the header says " + std::to_string(header_words) + " words, the file has " +
                     std::to_string(out.file_words));
}

void parse_binary(std::string_view bytes, const std::string& name, const std::unordered_set<std::string>* wanted,
                  WordVectors& out) {
  out.format = "word2vec binary";
  const size_t eol = bytes.find('\n');
  const std::vector<std::string_view> h = split_fields(bytes.substr(0, eol == std::string_view::npos ? 0 : eol));
  if (eol == std::string_view::npos || h.size() != 2 || !all_digits(h[0]) || !all_digits(h[1]) ||
      parse_count(h[0]) < 1 || parse_count(h[1]) < 1)
    throw ValueError(name + ":1: a word2vec binary file starts with a header line '<words> <dimensions>'");
  const int64_t words = parse_count(h[0]);
  out.dim = parse_count(h[1]);
  if (out.dim > (int64_t{1} << 24))
    throw ValueError(name + ":1: " + std::to_string(out.dim) + " dimensions is not plausible");
  Collector collect(name, wanted, out);
  const size_t vector_bytes = static_cast<size_t>(out.dim) * sizeof(float);
  size_t pos = eol + 1;
  for (int64_t i = 1; i <= words; ++i) {
    const std::string where = name + ": word " + std::to_string(i);
    while (pos < bytes.size() && bytes[pos] == '\n') ++pos;
    const size_t space = bytes.find(' ', pos);
    if (space == std::string_view::npos || space == pos || space - pos > 1000)
      throw ValueError(where + " of " + std::to_string(words) + ": the file ends or has no word here (cut short?)");
    std::string word(bytes.substr(pos, space - pos));
    pos = space + 1;
    if (bytes.size() - pos < vector_bytes)
      throw ValueError(where + " of " + std::to_string(words) + " ('" + word + "'): the file ends inside its vector");
    float* v = collect.add(word, i, where);
    for (int64_t k = 0; k < out.dim; ++k) {
      float value;
      std::memcpy(&value, bytes.data() + pos + static_cast<size_t>(k) * sizeof(float),
                  sizeof value);  // little-endian hosts
      check_finite(value, where, word);
      v[k] = value;
    }
    pos += vector_bytes;
  }
  while (pos < bytes.size() && (bytes[pos] == '\n' || bytes[pos] == ' ')) ++pos;
  if (pos != bytes.size())
    throw ValueError(name + ": the header says " + std::to_string(words) +
                     " words, the file has more bytes after them");
}

}  // namespace

WordVectors parse_word_vectors(std::string_view bytes, const std::string& name,
                               const std::unordered_set<std::string>* wanted) {
  WordVectors out;
  const bool binary = name.ends_with(".bin") || name.ends_with(".bin.gz");
  if (binary)
    parse_binary(bytes, name, wanted, out);
  else
    parse_text(bytes, name, wanted, out);
  return out;
}

WordVectors read_word_vectors(const std::string& path, const std::unordered_set<std::string>* wanted) {
  const int fd = io::open_regular_file(path);
  std::unique_ptr<gzFile_s, int (*)(gzFile)> in(gzdopen(fd, "rb"), gzclose);
  if (!in) {
    ::close(fd);
    throw IoError(path + ": cannot open");
  }
  gzbuffer(in.get(), 1 << 17);
  std::string bytes;
  std::vector<char> buffer(1 << 20);
  for (;;) {
    const int n = gzread(in.get(), buffer.data(), static_cast<unsigned>(buffer.size()));
    if (n < 0) {
      int code = 0;
      throw IoError(path + ": cannot read: " + gzerror(in.get(), &code));
    }
    if (n == 0) break;
    bytes.append(buffer.data(), static_cast<size_t>(n));
  }
  int code = 0;
  const char* message = gzerror(in.get(), &code);
  if (code != Z_OK && code != Z_STREAM_END) throw IoError(path + ": cannot read: " + message);
  return parse_word_vectors(bytes, path, wanted);
}

}  // namespace attn::data
