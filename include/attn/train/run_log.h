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
  JsonlLog(const std::string& path, bool append) : out_(path, append ? std::ios::app : std::ios::trunc) {
    if (!out_) throw IoError(path + ": cannot open for writing");
  }
  void write(const nlohmann::json& j) {
    out_ << j.dump() << '\n';
    out_.flush();
  }

 private:
  std::ofstream out_;
};

}  // namespace attn::train
