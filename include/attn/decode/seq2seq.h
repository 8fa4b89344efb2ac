#pragma once
// Inference with a trained synthetic-task seq2seq model (copy / reverse / sort): loading its
// checkpoint, decoding a batch and scoring it, and the accuracy per source length. What
// `attn eval`, `attn align`, `attn view`, `attn export`, `attn sweep`, `attn demo` and the
// seq2seq trainer's validation run.
//
// Checkpoint metadata "attn": {"format": "attn-seq2seq", "version", "config": Seq2SeqConfig,
// "task", "min_len", "max_len", "step", "best_token_accuracy", "vocabulary": [symbol names],
// and, written by the trainer, "hard_baseline"}.
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attn/data/metrics.h"
#include "attn/data/tasks.h"
#include "attn/io/safetensors.h"
#include "attn/models/seq2seq.h"

namespace attn::decode {

inline constexpr const char* kSeq2SeqFormat = "attn-seq2seq";

// What a seq2seq checkpoint says about itself.
struct Seq2SeqInfo {
  models::Seq2SeqConfig config;
  std::string task = "copy";
  int min_len = 0, max_len = 0;
  int64_t step = 0;
  double best_token_accuracy = 0.0;
};

// The checkpoint metadata of `info` (with the vocabulary of info.config.vocab symbols).
nlohmann::json seq2seq_metadata(const Seq2SeqInfo& info);
// The metadata of the seq2seq checkpoint `file` read from `path`: IoError naming the path for a
// foreign checkpoint, bad metadata, a bad configuration or a vocabulary that differs.
Seq2SeqInfo read_seq2seq_info(const io::SafetensorsFile& file, const std::string& path);

struct LoadedSeq2Seq {
  std::unique_ptr<models::Seq2Seq> model;
  Seq2SeqInfo info;
};

// Builds the model from the checkpoint's configuration, checks the vocabulary, and loads
// every parameter (IoError naming what differs).
LoadedSeq2Seq load_seq2seq(const std::string& path);

// Decodes `batch` (greedy when beam <= 1, else beam search of that width and GNMT length
// penalty α and coverage penalty β; at most the batch's target length + 5 steps) and counts
// the right tokens and sequences against its targets.
data::AccuracyCounts decode_and_score(models::Seq2Seq& model, const data::Batch& batch, int beam,
                                      float length_penalty = 1.0f, float coverage_penalty = 0.0f);

struct LengthAccuracy {
  int length = 0;
  double token_accuracy = 0.0;
  double sequence_accuracy = 0.0;
};

struct EvalOptions {
  std::vector<int> lengths = {5, 10, 20, 40, 80};
  int samples = 500;              // per length
  int beam = 1;                   // 1: greedy; > 1: beam width
  float length_penalty = 1.0f;    // beam: GNMT's α, scores divided by ((5 + length) / 6)^α
  float coverage_penalty = 0.0f;  // beam: GNMT's β (models::BeamOptions)
  uint64_t seed = 12345;
  int batch = 100;

  void validate() const;  // ValueError naming the bad option (--samples, --beam, a length)
};

// Decodes `samples` fresh examples of every length and scores them (token accuracy per
// target position with EOS, exact-sequence accuracy).
std::vector<LengthAccuracy> evaluate_seq2seq(models::Seq2Seq& model, data::TaskKind task, const EvalOptions& options);

// {"lengths": [{"length": 5, "token_accuracy": ..., "sequence_accuracy": ...}, ...]}
std::string accuracy_json(const std::vector<LengthAccuracy>& rows);

}  // namespace attn::decode
