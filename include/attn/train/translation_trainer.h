#pragma once
// Translation on a real parallel corpus (Multi30k layout: <data>/raw/<split>.<lang>.gz):
// SentencePiece pieces shared by both languages, token-budget batches, Adam with a
// learning-rate schedule and label smoothing, validation BLEU (sacreBLEU-compatible, on
// detokenised text against the raw references) that keeps the best model. What
// `attn train --task translate` runs.
//
// A run directory holds:
//   spm.model          the SentencePiece model (trained here unless --tokenizer is given)
//   model.safetensors  the best model by validation BLEU
//   last.safetensors   the latest model with optimizer state (for --resume)
//   log.jsonl          training lines and validations
// Checkpoint metadata: decode/translate.h.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attn/decode/translate.h"
#include "attn/train/run.h"
#include "attn/train/task_result.h"

namespace attn::train {

// The run options (run.h) with translation's defaults, and the task's own.
struct TranslationOptions : RunOptions {
  std::string data_dir;                          // required
  data::Corpus corpus = data::Corpus::multi30k;  // data::find_corpus; the checkpoint records it
  std::string src_lang = "de", tgt_lang = "en";
  std::string tokenizer;      // an existing SentencePiece model; empty: train one (shared)
  int vocab_size = 8000;      // when training the tokenizer
  int max_len = 100;          // pieces per side in training; longer sides are truncated
  int64_t train_limit = 0;    // the first N training pairs only (0: all)
  int64_t max_tokens = 4096;  // padded tokens per batch (source + target)
  int max_sentences = 128;    // rows per batch
  float label_smoothing = 0.1f;
  int64_t eval_sentences = 0;  // validation sentences (0: the whole val split)
  // --task summarize: src_lang/tgt_lang are file suffixes (article, summary), validation also
  // reports ROUGE-1/2/L (the best model is still the one of best validation BLEU), and the
  // checkpoint says so (decode::TranslationInfo::summarization).
  bool summarization = false;

  TranslationOptions() {
    steps = 10000;
    lr_schedule = "inverse_sqrt";
    warmup = 1000;
    log_every = 100;
    eval_every = 1000;  // validation BLEU (greedy) every N steps and at the end
  }
  void validate() const;  // ValueError naming the option
};

struct TranslationResult : TaskResult {
  // TaskResult: steps_done, interrupted, final_loss, train_seconds, seconds, model_path.
  TranslationResult() = default;
  explicit TranslationResult(const RunResult& r) : TaskResult(r), best_val_bleu(r.state.best_score) {}
  double best_val_bleu = 0.0;
  double tokens_per_second = 0.0;  // target tokens
};

// kind rnn with `config` a Seq2SeqConfig JSON, or transformer with a TransformerConfig
// JSON; the vocabulary fields are set from the tokenizer.
TranslationResult train_translation(models::TranslatorKind kind, nlohmann::json config,
                                    const TranslationOptions& options);

// Loading, translating and BLEU are attn/decode/translate.h (namespace attn::decode).

}  // namespace attn::train
