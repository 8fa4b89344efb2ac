#pragma once
// Explaining a trained encoder-decoder checkpoint: an attn-seq2seq one (a synthetic task; its
// sources are symbol strings, "5 9 3") or an attn-translation one (RNN or Transformer; its
// sources are lines of text). What `attn explain` runs on one source or a report's many; the
// measures are seq2seq_importance.h's, the report seq2seq_report.h's.
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "attn/decode/checkpoint_kind.h"
#include "attn/decode/seq2seq.h"
#include "attn/decode/translate.h"
#include "attn/explain/seq2seq_importance.h"
#include "attn/explain/seq2seq_report.h"

namespace attn::explain {

// A loaded encoder-decoder with what the measures need around it.
struct ExplainableSeq2Seq {
  std::optional<decode::LoadedSeq2Seq> synthetic;      // attn-seq2seq
  std::optional<decode::LoadedTranslator> translator;  // attn-translation
  SourceEmbeddingSeq2Seq model;
  std::string kind;  // "seq2seq <task>", "translation rnn", "translation transformer"
  nlohmann::json config;
  size_t max_source = 128;
  int max_output = 0;  // 0: no limit beyond 2·S + 10 (the Transformer: its positions)

  // The printable token of each id: a translation's pieces, a task's symbols.
  std::vector<std::string> tokens(const std::vector<int32_t>& ids) const;
  // The source ids of one line or symbol string, cut to max_source. ValueError for a symbol
  // string that does not parse.
  std::vector<int32_t> source_ids(const std::string& text) const;
  // Greedy decoding of ids (the source `text`, non-empty) and every measure over it.
  ExplainedPair explain(const std::string& text, const std::vector<int32_t>& ids) const;
};

// Every line with source tokens explained, in order; skipped_empty counts those with none.
// progress(i, n): before the first of the n lines (i = 0) and after each.
struct ExplainedSources {
  std::vector<ExplainedPair> pairs;
  int64_t skipped_empty = 0;
};
ExplainedSources explain_sources(const ExplainableSeq2Seq& model, const std::vector<std::string>& lines,
                                 const std::function<void(int64_t, int64_t)>& progress = {});

// kind: CheckpointKind::seq2seq or translation. IoError for a file that does not load,
// ValueError for a model without attention.
ExplainableSeq2Seq load_explainable_seq2seq(const std::string& path, decode::CheckpointKind kind);

// The sources of a report: a translation model's `split` (dev, test or a file stem) of the
// parallel corpus under `data` (the multi30k folder or the folder holding it), or `limit`
// generated sources of a synthetic task drawn with `seed`; the first `limit` (0: all).
// *split_name: the corpus split read ("val", "test2016", ...), or "generated".
std::vector<std::string> report_sources(const ExplainableSeq2Seq& model, const std::string& data,
                                        const std::string& split, int64_t limit, uint64_t seed,
                                        std::string* split_name);

}  // namespace attn::explain
