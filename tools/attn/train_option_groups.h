#pragma once
// `attn train`'s options in groups, and its run configuration file.
//
// Every option of the train command belongs to one or more groups; each group applies to a
// set of targets (a task, and for the text tasks the model kind). --help shows an option
// under its first group's heading, which names the targets, and lists the others. An
// option given (on the command line or in --config) whose groups do not apply to the
// chosen target is refused, exit 2, naming the option and the target: the refusal is
// derived from the groups, there is no second list of flags to keep. An option placed in
// no group (help) applies to every task.
//
// --config FILE reads options from a TOML file (CLI11's reader: `name = value` lines,
// `#` comments); an option on the command line overrides the file. Every run folder gets
// a config.toml that repeats the run: the options given (on the command line or in a
// --config file), the thread count, and the provenance (command line, attn version and
// commit, threads, machine) as comments. Options not given are not written: their
// defaults depend on the task and model, and the same attn applies them again. Paths in the
// file are as given on the command line (relative ones to the folder attn ran in).
#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <vector>

#include "attn/train/run.h"

namespace attn::cli {

// What a train command line trains.
enum class TrainTarget {
  seq2seq,  // --task copy | reverse | sort
  translate_rnn,
  translate_transformer,
  sst2_bilstm,
  sst2_bilstm_attn,
  sst2_transformer_cls,
  charlm,
  g2p_rnn,  // --task g2p
  g2p_transformer,
  asr,  // --task asr
};

struct OptionGroup {
  std::string heading;               // --help's section title, naming the targets
  std::vector<TrainTarget> targets;  // where its options apply
};

// The train command's groups: run (every task), synthetic seq2seq, RNN seq2seq model, text
// data, classifier, BiLSTM classifier, attention pooling, translation, character LM, G2P,
// Transformer, Transformer encoder-decoder and Transformer classifier, ASR.
struct TrainGroups {
  OptionGroup run, synthetic, rnn, text_data, classifier, bilstm, pooling, translation, lm, g2p, transformer,
      transformer_seq2seq, transformer_classifier, asr;
  TrainGroups();
};

class OptionGroups {
 public:
  // Puts `option` under the heading of groups[0] in --help and notes the other groups'
  // targets in its description; it applies to the targets of every group given.
  CLI::Option* add(CLI::Option* option, const std::vector<const OptionGroup*>& groups);
  // The same for the option named `name` (registered by a helper shared with other commands).
  void add(CLI::App* cmd, const std::string& name, const std::vector<const OptionGroup*>& groups);
  // UsageError for the first option given that applies to none of `target`'s groups:
  // "--bucket does not apply to --task translate --model rnn (it is for: ...)".
  void refuse_outside(const CLI::App* cmd, TrainTarget target, const std::string& task) const;

 private:
  std::map<std::string, std::vector<const OptionGroup*>> groups_of_;  // by option name ("--bucket")
};

// Reads the TOML file `path` into the options of `cmd` that the command line did not give.
// UsageError for an unknown option, one set twice, a section, a bad value, or an option
// that cannot come from a file (--config, --resume, --overwrite); IoError when the file
// cannot be read.
void apply_config_file(CLI::App* cmd, const std::string& path);
// The TOML text of out_dir/config.toml for this run of `cmd` (see above), for
// train::RunOptions::config_toml: run() writes it once the folder is the run's.
std::string run_config_text(const CLI::App* cmd, const train::Provenance& provenance);

}  // namespace attn::cli
