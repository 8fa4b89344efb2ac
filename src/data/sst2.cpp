#include "attn/data/sst2.h"

#include <filesystem>

#include "attn/data/text.h"
#include "attn/error.h"

namespace attn::data {
namespace {

std::string strip(const std::string& s) {
  const char* ws = " \t\r\n\f\v";
  const size_t begin = s.find_first_not_of(ws);
  if (begin == std::string::npos) return "";
  const size_t end = s.find_last_not_of(ws);
  return s.substr(begin, end - begin + 1);
}

}  // namespace

std::vector<LabeledText> read_sst2(const std::string& path) {
  const std::vector<std::string> lines = read_lines(path);
  std::vector<LabeledText> out;
  out.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    const std::string where = path + ":" + std::to_string(i + 1);
    if (strip(line).empty()) continue;
    const size_t tab = line.rfind('\t');
    if (tab == std::string::npos)
      throw ValueError(where + ": expected '<sentence><TAB><label>', found no tab");
    LabeledText example;
    example.text = strip(line.substr(0, tab));
    const std::string label = strip(line.substr(tab + 1));
    if (example.text.empty()) throw ValueError(where + ": empty sentence before the tab");
    if (label == "0") {
      example.label = 0;
    } else if (label == "1") {
      example.label = 1;
    } else {
      throw ValueError(where + ": label '" + label + "' is not 0 or 1");
    }
    out.push_back(std::move(example));
  }
  if (out.empty()) throw ValueError(path + ": no examples (expected '<sentence><TAB><label>' lines)");
  return out;
}

std::string sst2_split_path(const std::string& data_dir, const std::string& split) {
  namespace fs = std::filesystem;
  std::string file;
  if (split == "train") {
    file = "sentiment-train.gz";
  } else if (split == "dev") {
    file = "sentiment-dev";
  } else if (split == "test") {
    file = "sentiment-test";
  } else {
    throw IoError("unknown SST-2 split '" + split + "' (valid: train, dev, test)");
  }
  // Accept both the folder holding sst2/ and sst2/ itself.
  fs::path dir(data_dir);
  std::error_code ec;
  if (fs::is_directory(dir / "sst2", ec)) dir /= "sst2";
  return (dir / file).string();
}

std::vector<std::string> whitespace_tokens(const std::string& text) {
  std::vector<std::string> tokens;
  size_t i = 0;
  const size_t n = text.size();
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; };
  while (i < n) {
    while (i < n && is_space(text[i])) ++i;
    const size_t begin = i;
    while (i < n && !is_space(text[i])) ++i;
    if (i > begin) tokens.push_back(text.substr(begin, i - begin));
  }
  return tokens;
}

}  // namespace attn::data
