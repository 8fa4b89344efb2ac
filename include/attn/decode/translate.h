#pragma once
// Translation with a trained model: loading a translation checkpoint with its SentencePiece
// tokenizer, translating lines (greedy or beam, with the attention weights when asked) and
// scoring a split of a parallel corpus with corpus BLEU. What `attn translate`, `attn eval`,
// `attn align` and the translation trainer's validation run.
//
// Checkpoint metadata "attn": {"format": "attn-translation", "kind": "rnn"|"transformer",
// "config": {...}, "src_lang", "tgt_lang", "tokenizer": "spm.model" (next to the checkpoint),
// "tokenizer_crc32", "vocab_size", "step", "best_val_bleu", and "summarization": true for a
// `--task summarize` run (absent otherwise), "corpus": "tatoeba" for a model trained on Tatoeba
// (absent: Multi30k, or a summarize run's files; data/parallel.h)}.
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "attn/data/parallel.h"
#include "attn/data/rouge.h"
#include "attn/data/subword.h"
#include "attn/data/translation_metrics.h"
#include "attn/io/safetensors.h"
#include "attn/models/translator.h"

namespace attn::decode {

inline constexpr const char* kTranslationFormat = "attn-translation";

struct TranslationInfo {
  models::TranslatorKind kind = models::TranslatorKind::rnn;
  nlohmann::json config;
  std::string src_lang, tgt_lang;
  std::string tokenizer;  // absolute path of the SentencePiece model
  int64_t step = 0;
  double best_val_bleu = 0.0;
  bool summarization = false;                    // --task summarize: `attn eval` reports ROUGE-1/2/L
  data::Corpus corpus = data::Corpus::multi30k;  // what `attn eval --data` reads
};

struct LoadedTranslator {
  std::unique_ptr<models::Translator> model;
  std::optional<data::SubwordModel> tokenizer;  // always set once loaded
  TranslationInfo info;
};

// The checkpoint metadata of `info` for a model of `vocab` pieces.
nlohmann::json translation_metadata(const TranslationInfo& info, int64_t vocab);

// IoError naming the path for a missing or foreign checkpoint / tokenizer.
LoadedTranslator load_translator(const std::string& path);
// The same from a file already read (the trainer's --resume).
LoadedTranslator load_translator(const io::SafetensorsFile& file, const std::string& path);

struct TranslateOptions {
  int beam = 5;
  float length_penalty = 1.0f;
  float coverage_penalty = 0.0f;                      // beam: GNMT's β (models::BeamOptions)
  models::BeamStop stop = models::BeamStop::bound;    // beam: when a sentence stops
  models::BeamRules rules = models::BeamRules::attn;  // beam: attn's or CTranslate2's rules
  int batch = 64;                                     // sentences per decoding batch
  int max_len = 0;                                    // 0: 2 · source pieces + 10
  models::AttentionSelect select{};
  bool attention = false;  // also return each sentence's pieces and attention weights
};

// One translated line. With TranslateOptions::attention, its source pieces, output pieces
// and weights (output step × source piece; multi-head RNN weights averaged over heads).
// With the pointer-generator, a copied source piece outside the vocabulary is emitted by its
// text, and copy holds the copy probability 1 − p_gen of each output piece (with
// TranslateOptions::attention; empty otherwise).
struct Translation {
  std::string text;
  std::vector<std::string> src_pieces, out_pieces;
  std::vector<std::vector<float>> weights;
  std::vector<float> copy;
};
// The pieces of output ids, EOS included; a copied OOV (id >= V, the pointer-generator) by its
// text in `oovs` (models/pointer.h).
std::vector<std::string> output_pieces(const data::SubwordModel& tokenizer, const std::vector<int32_t>& ids,
                                       const std::vector<std::string>& oovs);
// The text of output ids up to EOS, copied OOVs included.
std::string output_text(const data::SubwordModel& tokenizer, const std::vector<int32_t>& ids,
                        const std::vector<std::string>& oovs);

// Translates each line (empty lines give empty outputs), batched by source length, outputs
// in input order. ValueError for beam or batch < 1.
std::vector<Translation> translate(LoadedTranslator& model, const std::vector<std::string>& lines,
                                   const TranslateOptions& options);

// Corpus BLEU of translating `split` (e.g. test2016; Tatoeba: test) of the model's corpus under
// `data_dir` (data::load_corpus) against its raw references, with the
// hypotheses, and for a summarization model (TranslationInfo::summarization) ROUGE-1/2/L.
// limit > 0 uses the first `limit` sentences.
struct TranslationEval {
  double bleu = 0.0;
  std::string bleu_line;  // sacreBLEU-style summary
  nlohmann::json bleu_json;
  std::optional<data::RougeResult> rouge;  // summarization models only
  std::vector<std::string> hypotheses;
  int64_t sentences = 0;
  double seconds = 0.0;
  // data/translation_metrics.h: the copy accuracy of source words outside the training
  // targets' words, the repetition rate (n = 2..4) and the under-translated source pieces.
  data::CopyAccuracy copy;
  double repetition = 0.0;
  data::UnderTranslation under;
  std::vector<data::LengthBucket> buckets;  // BLEU by source length (data::kSourceLengthBuckets)
};
TranslationEval evaluate_translation(LoadedTranslator& model, const std::string& data_dir, const std::string& split,
                                     const TranslateOptions& options, int64_t limit = 0);

}  // namespace attn::decode
