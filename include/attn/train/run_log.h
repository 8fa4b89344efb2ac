#pragma once
// log.jsonl of a training run: one JSON object per line, flushed at once, so a run that
// is stopped keeps every line written so far.
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attn/error.h"

namespace attn::train {

class JsonlLog {
 public:
  // append: continue an existing log (a resumed run); otherwise start it afresh. A log whose
  // last line was cut short (a kill or a full disk during a write) gets a newline first, so
  // the new session's records start a line of their own instead of being glued onto it.
  JsonlLog(const std::string& path, bool append);
  // IoError when the line could not be written (a full disk): the run stops rather than
  // go on with a log that silently lacks lines.
  void write(const nlohmann::json& j);

 private:
  std::string path_;
  std::ofstream out_;
};

// A log.jsonl as `attn view --run` reads it.
struct RunLogRecords {
  nlohmann::json records = nlohmann::json::array();  // one JSON object per line, in order
  std::vector<std::string> warnings;                 // one per damaged line skipped
};
// Reads the log at `path`: a regular file (io::open_regular_file) of at most 256 MiB, each
// non-blank line one JSON object read with attn/json.h's limits. A damaged line (cut short,
// not JSON, not an object, nested too deep) is skipped with a warning naming it when it is
// the last line or the line before a session's first record ({"run": ...}): what a kill or
// a full disk leaves behind, and --resume continues after. A damaged line anywhere else is
// an IoError "<path>: line N is not valid JSON: ...".
RunLogRecords read_run_log(const std::string& path);

}  // namespace attn::train
