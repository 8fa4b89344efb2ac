#pragma once
// Options and helpers shared by the seq2seq subcommands.
#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attn/decode/checkpoint_kind.h"
#include "attn/decode/seq2seq.h"
#include "attn/models/seq2seq.h"
#include "attn/train/progress.h"
#include "attn/train/seq2seq_trainer.h"
#include "commands.h"
#include "option_parsing.h"  // parse_lengths

namespace attn::cli {

// --encoder --layers --bidirectional --emb --hidden --dropout --attention --score
// --no-input-feeding
// The seq2seq choices by the names given (--encoder, --attention, --score): apply() parses
// them into a configuration once, ValueError for an unknown or misplaced name. attn train's
// sst2 task reads --encoder raw (lstm | average), attn sweep --attention (a list).
struct ModelChoiceNames {
  std::string encoder = "gru", attention = "bahdanau", score, coverage = "none", normalizer = "softmax";
  void apply(models::Seq2SeqConfig& config) const;
};
void add_model_options(CLI::App* app, models::Seq2SeqConfig& config, ModelChoiceNames& names);
// --task --min-len --max-len --steps --batch --lr --clip --seed --log-every --eval-every
void add_training_options(CLI::App* app, train::TrainOptions& options);
// --threads (sets the kernels' and OpenBLAS's thread count when parsed)
void add_threads_option(CLI::App* app);
// --precision fp32|bf16, and int8 for inference (sets the GEMM precision when parsed,
// attn/precision.h): an unknown name, or int8 on training, is a usage error; bf16 or int8 on a
// CPU without it an error naming what is missing (exit 1).
enum class PrecisionUse { training, inference };
void add_precision_option(CLI::App* app, PrecisionUse use = PrecisionUse::training);
// The kind of the checkpoint at `path` when it is one of `allowed`; otherwise a UsageError
// (exit 2) naming the file, the kinds the command needs and the format that arrived, then
// `hint`. IoError when the file holds no readable attn metadata. Every command refuses a
// checkpoint of the wrong kind this way (docs/reliability.md).
decode::CheckpointKind require_checkpoint(const std::string& path,
                                          std::initializer_list<decode::CheckpointKind> allowed,
                                          const std::string& hint = "");
// --normalizer / --alpha (add_model_options) into a Transformer's or a classifier's JSON
// configuration: "normalizer" and "alpha", only when not softmax (as the configurations write
// them). UsageError (exit 2) for an unknown name or an alpha that is not finite and > 1.
void add_normalizer_json(CLI::App* cmd, const models::Seq2SeqConfig& config, nlohmann::json& j);
// --coverage-penalty BETA (translate, eval, align), and its check: finite, >= 0, and only with
// a beam (UsageError otherwise).
void add_coverage_penalty_option(CLI::App* cmd, float& beta);
// --speech FILE --utterance ID --join N (align, view): the utterance of an ASR checkpoint
// (decode::speech_utterance reads it). check() after the checkpoint's kind is known: for any
// other kind one of them given is a UsageError naming it and the kind that arrived.
struct SpeechOptions {
  std::string speech, utterance;
  int join = 1;
  std::vector<CLI::Option*> add(CLI::App* cmd);  // the three options
  void check(const CLI::App* cmd, decode::CheckpointKind kind, const std::string& model) const;
};
// UsageError "<option> needs <wanted>; <model> is '<its kind>'" for the first of `options` given
// on the command line, unless the checkpoint is of the kind they apply to (`applies`);
// `wanted` says which, e.g. "a translation checkpoint".
void refuse_options_for_kind(const CLI::App* cmd, std::initializer_list<const char*> options, bool applies,
                             const std::string& wanted, const std::string& model, decode::CheckpointKind kind);
// --beam-stop bound|top (models::BeamStop) into `stop`.
void add_beam_stop_option(CLI::App* cmd, models::BeamStop& stop);
// --beam-rules attn|ctranslate2 (models::BeamRules) into `rules`.
void add_beam_rules_option(CLI::App* cmd, models::BeamRules& rules);
// UsageError for what CTranslate2's rules do not take: --beam-stop top, a coverage penalty.
void check_beam_rules(models::BeamRules rules, models::BeamStop stop, float coverage_penalty);
void check_coverage_penalty(float beta, int beam);
// After reading std::cin to its end: an IoError when the read failed (stdin is a directory,
// an I/O error) instead of treating the lines read so far as the whole input.
void check_stdin_read();
// The whole standard input, refused (IoError, after reading at most max_bytes + 1 bytes)
// when it holds more than max_bytes: `--stdin < /dev/zero` used to read until memory ran out.
std::string read_stdin_bounded(size_t max_bytes);
// An output (option and path; an empty path is skipped), or the standard output, that names a
// file the command has read so far, a UsageError before the work: called once a command's inputs are open, so
// that `view --model M --out M` or `eval --hypotheses RUN/spm.model` is refused before
// decoding. (io::AtomicFile refuses it again when the output is written, for an input read
// later.) Compared by device and inode (io::check_not_an_input), not by name.
void refuse_outputs_naming_inputs(std::initializer_list<std::pair<const char*, std::string>> outputs);
// A CLI11 check: a whole number >= min ("--threads: must be a positive integer, got '0'";
// "--seed: must be a non-negative integer, got '-1'", which CLI11 would wrap to 2^64 - 1).
CLI::Validator integer_at_least(unsigned long long min);

std::vector<std::string> split_list(const std::string& text);

// Runs `fn`, turning ValueError (a bad option value found before work starts) into a
// UsageError (exit code 2).
template <class Fn>
void as_usage(Fn&& fn) {
  try {
    fn();
  } catch (const ValueError& e) {
    throw UsageError(e.what());
  }
}

// Whether `flag` (e.g. "--steps") was given on `cmd`'s command line.
inline bool given(const CLI::App* cmd, const char* flag) { return cmd->count(flag) > 0; }

// The data folder a command reads: `given` (its --data) when set; otherwise the first of
// attn data get's folder and ../shared/data that holds `set` (sst2, multi30k, ...), named on
// stderr. UsageError `usage` naming the folders looked in when neither holds it.
std::string data_or_default(const std::string& given, const std::string& set, const std::string& usage);

// SIGINT (Ctrl-C), SIGTERM and SIGHUP set the returned flag; a second signal exits at once
// with 128 + its number.
const std::atomic<bool>& install_interrupt_flag();
// The signal that set the flag (SIGINT, SIGTERM, SIGHUP); 0 when none did.
int interrupt_signal();

// Markdown table: one row per length, one column pair per model.
std::string accuracy_table(const std::vector<std::string>& names,
                           const std::vector<std::vector<decode::LengthAccuracy>>& results);

// Writes accuracy_vs_length.png and .svg into dir.
void write_accuracy_plot(const std::string& dir, const std::string& task, const std::vector<std::string>& names,
                         const std::vector<std::vector<decode::LengthAccuracy>>& results);

// Refuses (UsageError naming --eval-lengths) an evaluation whose decoding batch would not fit
// in the available memory, before any data is generated.
void check_eval_memory(const models::Seq2SeqConfig& config, const decode::EvalOptions& options);

// Decodes one source and writes its alignment heatmap (PNG or SVG by extension).
// Returns the decoded output as text.
std::string write_alignment(models::Seq2Seq& model, const std::vector<int32_t>& source, int beam, float length_penalty,
                            const std::string& path);

// Returns fn(progress) with a train::Progress named `label` drawn from the library's
// progress(done, total) calls (made at the first, done 0, and finished after).
template <class Fn>
auto with_progress(const char* label, Fn&& fn) {
  std::optional<train::Progress> bar;
  auto result = fn([&](int64_t done, int64_t total) {
    if (!bar) {
      bar.emplace(label, total);
    } else {
      bar->update(done, {});
    }
  });
  if (bar) bar->finish();
  return result;
}

}  // namespace attn::cli

namespace attn::cli {

// Trains one model per attention type into out_dir/<attention>/, evaluates each, writes
// results.csv, results.json, accuracy_vs_length.png/.svg into out_dir and prints the
// markdown table. Returns the per-model results in the order of `attentions`.
struct Comparison {
  std::vector<std::string> names;
  std::vector<std::vector<decode::LengthAccuracy>> results;
};
// `score`: --score as given, applied to the decoders it belongs to (at least one).
Comparison run_comparison(const std::vector<std::string>& attentions, const models::Seq2SeqConfig& base,
                          const std::string& score, const train::TrainOptions& options, const decode::EvalOptions& eval,
                          const std::string& out_dir);

}  // namespace attn::cli
