#pragma once
// log.jsonl of a training run: one JSON object per line, flushed at once, so a run that
// is stopped keeps every line written so far.
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "attn/error.h"

namespace attn::train {

class JsonlLog {
 public:
  // append: continue an existing log (a resumed run); otherwise start it afresh.
  JsonlLog(const std::string& path, bool append) : path_(path), out_(path, append ? std::ios::app : std::ios::trunc) {
    if (!out_) throw IoError(path + ": cannot open for writing");
  }
  // IoError when the line could not be written (a full disk): the run stops rather than
  // go on with a log that silently lacks lines.
  void write(const nlohmann::json& j) {
    out_ << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    out_.flush();
    if (!out_) throw IoError(path_ + ": cannot write (is the disk full?)");
  }

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace attn::train
