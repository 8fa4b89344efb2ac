#include "attn/train/run_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <optional>

#include "attn/io/input_file.h"
#include "attn/json.h"

namespace attn::train {
namespace {

// Whether the file at `path` is non-empty and its last byte is not a newline.
bool ends_mid_line(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;  // a new log
  char last = '\n';
  const off_t size = ::lseek(fd, 0, SEEK_END);
  if (size > 0 && ::pread(fd, &last, 1, size - 1) != 1) last = '\n';
  ::close(fd);
  return last != '\n';
}

}  // namespace

JsonlLog::JsonlLog(const std::string& path, bool append)
    : path_(path), out_(path, append ? std::ios::app : std::ios::trunc) {
  if (!out_) throw IoError(path + ": cannot open for writing");
  if (append && ends_mid_line(path)) {
    out_ << '\n';
    out_.flush();
    if (!out_) throw IoError(path_ + ": cannot write (is the disk full?)");
  }
}

void JsonlLog::write(const nlohmann::json& j) {
  out_ << json_text(j) << '\n';
  out_.flush();
  if (!out_) throw IoError(path_ + ": cannot write (is the disk full?)");
}

RunLogRecords read_run_log(const std::string& path) {
  const std::string text = io::read_regular_file(path, kMaxJsonBytes);
  struct Line {
    std::optional<nlohmann::json> record;  // empty: damaged
    std::string problem;                   // "line N is not valid JSON: ..."
  };
  std::vector<Line> lines;
  int64_t number = 0;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + at, end - at);
    at = end + 1;
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    Line parsed;
    try {
      nlohmann::json j = parse_json(line, "line " + std::to_string(number));
      if (j.is_object())
        parsed.record = std::move(j);
      else
        parsed.problem = "line " + std::to_string(number) + " is not a JSON object";
    } catch (const IoError& e) {
      parsed.problem = e.what();
    }
    lines.push_back(std::move(parsed));
  }
  RunLogRecords out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const Line& l = lines[i];
    if (l.record) {
      out.records.push_back(*l.record);
      continue;
    }
    const bool last = i + 1 == lines.size();
    const bool before_session = !last && lines[i + 1].record && lines[i + 1].record->contains("run");
    if (!last && !before_session) throw IoError(path + ": " + l.problem);
    out.warnings.push_back(
        path + ": " + l.problem + "; skipped (" +
        (last ? "the last line: cut short by a kill or a full disk?" : "cut short before a resumed session") + ")");
  }
  return out;
}

}  // namespace attn::train
