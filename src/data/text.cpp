#include "attn/data/text.h"

#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "attn/error.h"

namespace attn::data {

std::vector<std::string> read_lines(const std::string& path) {
  // gzopen reads uncompressed files unchanged, so one path serves both kinds.
  std::unique_ptr<gzFile_s, int (*)(gzFile)> file(gzopen(path.c_str(), "rb"), gzclose);
  if (!file) throw IoError("cannot open '" + path + "' for reading");
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
  return lines;
}

void write_lines(const std::string& path, const std::vector<std::string>& lines) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw IoError("cannot open '" + tmp + "' for writing");
    for (const auto& line : lines) out << line << '\n';
    out.flush();
    if (!out) {
      out.close();
      std::remove(tmp.c_str());
      throw IoError("cannot write '" + tmp + "'");
    }
  }
  std::error_code error;
  std::filesystem::rename(tmp, path, error);
  if (error) {
    std::remove(tmp.c_str());
    throw IoError("cannot rename '" + tmp + "' to '" + path + "': " + error.message());
  }
}

bool file_exists(const std::string& path) {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error);
}

}  // namespace attn::data
