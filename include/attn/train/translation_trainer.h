#pragma once
// Translation on a real parallel corpus (Multi30k layout: <data>/raw/<split>.<lang>.gz):
// SentencePiece pieces shared by both languages, token-budget batches, Adam with a
// learning-rate schedule and label smoothing, validation BLEU (sacreBLEU-compatible, on
// detokenised text against the raw references) that keeps the best model. What
// `attn train --task translate`, `attn translate` and `attn eval` run.
//
// A run directory holds:
//   spm.model          the SentencePiece model (trained here unless --tokenizer is given)
//   model.safetensors  the best model by validation BLEU
//   last.safetensors   the latest model with optimizer state (for --resume)
//   log.jsonl          training lines and validations
// Checkpoint metadata "attn": {"format": "attn-translation", "kind": "rnn"|"transformer",
// "config": {...}, "src_lang", "tgt_lang", "tokenizer": "spm.model" (next to the checkpoint),
// "vocab_size", "step", "best_val_bleu"}.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/data/subword.h"
#include "attn/models/translator.h"
#include "attn/train/run.h"

namespace attn::train {

// The run options (run.h) with translation's defaults, and the task's own.
struct TranslationOptions : RunOptions {
  std::string data_dir;            // required
  std::string src_lang = "de", tgt_lang = "en";
  std::string tokenizer;           // an existing SentencePiece model; empty: train one (shared)
  int vocab_size = 8000;           // when training the tokenizer
  int max_len = 100;               // pieces per side in training; longer sides are truncated
  int64_t train_limit = 0;         // the first N training pairs only (0: all)
  int64_t max_tokens = 4096;       // padded tokens per batch (source + target)
  int max_sentences = 128;         // rows per batch
  float label_smoothing = 0.1f;
  int64_t eval_sentences = 0;      // validation sentences (0: the whole val split)

  TranslationOptions() {
    steps = 10000;
    lr_schedule = "inverse_sqrt";
    warmup = 1000;
    log_every = 100;
    eval_every = 1000;  // validation BLEU (greedy) every N steps and at the end
  }
  void validate() const;  // ValueError naming the option
};

struct TranslationResult {
  int64_t steps_done = 0;
  bool interrupted = false;
  double best_val_bleu = 0.0;
  double final_loss = 0.0;
  double train_seconds = 0.0;
  double tokens_per_second = 0.0;  // target tokens
  std::string model_path;
};

// kind "rnn" with `config` a Seq2SeqConfig JSON, or "transformer" with a TransformerConfig
// JSON; the vocabulary fields are set from the tokenizer.
TranslationResult train_translation(const std::string& kind, nlohmann::json config, const TranslationOptions& options);

struct TranslationInfo {
  std::string kind;
  nlohmann::json config;
  std::string src_lang, tgt_lang;
  std::string tokenizer;  // absolute path of the SentencePiece model
  int64_t step = 0;
  double best_val_bleu = 0.0;
};

struct LoadedTranslator {
  std::unique_ptr<models::Translator> model;
  std::optional<data::SubwordModel> tokenizer;  // always set once loaded
  TranslationInfo info;
};

// IoError naming the path for a missing or foreign checkpoint / tokenizer.
LoadedTranslator load_translator(const std::string& path);

struct TranslateOptions {
  int beam = 5;
  float length_penalty = 1.0f;
  int batch = 64;          // sentences per decoding batch
  int max_len = 0;         // 0: 2 · source pieces + 10
  models::AttentionSelect select{};
};

// Translates each line (empty lines give empty outputs), batched by source length, outputs
// in input order. With `attention`, each sentence's source pieces, output pieces and weights
// (output step × source piece) are returned too.
struct Translation {
  std::string text;
  std::vector<std::string> src_pieces, out_pieces;
  std::vector<std::vector<float>> weights;
};
std::vector<Translation> translate(LoadedTranslator& model, const std::vector<std::string>& lines,
                                   const TranslateOptions& options, bool attention = false);

// Corpus BLEU of translating `split` (e.g. test2016) against its raw references, with the
// hypotheses. limit > 0 uses the first `limit` sentences.
struct TranslationEval {
  double bleu = 0.0;
  std::string bleu_line;  // sacreBLEU-style summary
  nlohmann::json bleu_json;
  std::vector<std::string> hypotheses;
  int64_t sentences = 0;
  double seconds = 0.0;
};
TranslationEval evaluate_translation(LoadedTranslator& model, const std::string& data_dir, const std::string& split,
                                     const TranslateOptions& options, int64_t limit = 0);

}  // namespace attn::train
