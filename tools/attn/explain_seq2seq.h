#pragma once
// attn explain for encoder-decoders (include/attn/explain/seq2seq_importance.h): RNN seq2seq
// checkpoints of the synthetic tasks (--input "5 9 3", or --limit N generated sources) and
// translation checkpoints (RNN or Transformer; --text, or --data D --split dev|test).
// cmd_explain.cpp hands a seq2seq or translation checkpoint here.
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "attn/decode/checkpoint_kind.h"

namespace attn::cli {

struct Seq2SeqExplainArgs {
  std::string model;
  decode::CheckpointKind kind = decode::CheckpointKind::seq2seq;  // or translation
  std::string text, input, data, split = "test", out, picture;
  int64_t limit = 0;
  bool json = false;
  bool split_given = false, limit_given = false, text_given = false, input_given = false;
  uint64_t seed = 1;  // the synthetic sources' generator
};

// A report into `out` (created): report.json (j), report.md (md) and write_pictures(out); on
// stdout the Markdown, or with `json` the JSON without its per-item list `items` ("sentences",
// "pairs").
void write_report(const std::string& out, const nlohmann::json& j, const std::string& md,
                  const std::function<void(const std::string&)>& write_pictures, const char* items, bool json);

// UsageError (exit 2) for a bad combination of options.
void explain_seq2seq(const Seq2SeqExplainArgs& args);

}  // namespace attn::cli
