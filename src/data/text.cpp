#include "attn/data/text.h"

#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "attn/error.h"
#include "attn/io/atomic_file.h"
#include "attn/io/input_file.h"

namespace attn::data {
namespace {

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t len = utf8_length_at(s, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

}  // namespace

std::vector<std::string> read_lines(const std::string& path) {
  // gzopen reads uncompressed files unchanged, so one path serves both kinds.
  const int fd = io::open_regular_file(path);  // a FIFO is refused, never waited on
  std::unique_ptr<gzFile_s, int (*)(gzFile)> file(gzdopen(fd, "rb"), gzclose);
  if (!file) {
    ::close(fd);
    throw IoError("cannot open '" + path + "' for reading");
  }
  gzbuffer(file.get(), 1 << 17);
  std::vector<std::string> lines;
  std::string current;
  char buffer[1 << 16];
  for (;;) {
    const int n = gzread(file.get(), buffer, sizeof buffer);
    if (n < 0) {
      int code = 0;
      throw IoError("cannot read '" + path + "': " + gzerror(file.get(), &code));
    }
    if (n == 0) break;
    for (int i = 0; i < n; ++i) {
      if (buffer[i] == '\n') {
        lines.push_back(std::move(current));
        current.clear();
      } else {
        current.push_back(buffer[i]);
      }
    }
  }
  int code = 0;
  const char* message = gzerror(file.get(), &code);
  if (code != Z_OK && code != Z_STREAM_END) throw IoError("cannot read '" + path + "': " + message);
  if (!current.empty()) lines.push_back(std::move(current));
  for (std::string& line : lines)
    if (!is_valid_utf8(line)) line = valid_utf8(line);
  return lines;
}

namespace {
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Calls each(code point) for every code point of `text`, U+FFFD for a byte that does not
// start a valid sequence.
template <typename Each>
void for_each_code_point(std::string_view text, Each each) {
  for (size_t i = 0; i < text.size();) {
    const size_t len = utf8_length_at(text, i);
    each(len ? text.substr(i, len) : kReplacement);
    i += len ? len : 1;
  }
}
}  // namespace

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for_each_code_point(text, [&](std::string_view c) { out += c; });
  return out;
}

std::vector<std::string> utf8_characters(std::string_view text) {
  std::vector<std::string> out;
  for_each_code_point(text, [&](std::string_view c) { out.emplace_back(c); });
  return out;
}

void write_lines(const std::string& path, const std::vector<std::string>& lines) {
  io::AtomicFile file(path);
  for (const auto& line : lines) {
    file.write(line);
    file.write("\n");
  }
  file.commit();
}

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

bool file_exists(const std::string& path) {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error);
}

}  // namespace attn::data
