#pragma once
// `attn train --task translate` and `attn train --task charlm`: their extra options, and the
// run controls every task shares. The runs themselves are registered in train_text_tasks.cpp
// (train_tasks.h). Options shared with the synthetic seq2seq trainer (--steps --lr
// --lr-schedule --warmup --clip --seed --log-every --eval-every --emb --hidden --layers
// --dropout --heads --attention --score --encoder --bidirectional --batch --max-len) keep
// task-specific defaults unless given on the command line.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "attn/models/seq2seq.h"
#include "attn/train/seq2seq_trainer.h"
#include "common.h"
#include "train_option_groups.h"

namespace attn::cli {

struct TextTaskArgs {
  std::string src = "de", tgt = "en";
  std::string tokenizer;
  int vocab_size = 8000;
  int64_t max_tokens = 4096;
  int max_sentences = 128;
  float label_smoothing = 0.1f;
  int64_t eval_sentences = 0;
  int encoder_layers = 3, decoder_layers = 3;
  std::string norm = "pre";
  std::string positions = "sinusoidal";
  std::string activation = "relu";
};

// Adds --src --tgt --tokenizer --vocab-size --max-tokens --max-sentences --label-smoothing
// --eval-sentences --enc-layers --dec-layers --norm --positions --activation, in their groups.
void add_text_task_options(CLI::App* cmd, TextTaskArgs& args, const TrainGroups& g, OptionGroups& groups);

// --resume, --max-minutes, --save-every: how every task's run is stopped, saved and continued.
void add_run_control_options(CLI::App* cmd, train::RunOptions& options);
// Copies those, --out, the provenance of this command line and its config.toml from `from` into `to`.
void copy_run_controls(const train::RunOptions& from, train::RunOptions& to);

// After a run: when it was interrupted, says so (naming the signal) and throws Interrupted
// with exit code 128 + the signal.
void report_interrupt(bool interrupted, int64_t steps, const std::string& out);
// A task's run: train() with o.stop on the interrupt flag, then report_interrupt, summary(result)
// (its one line) and the model's path.
template <class Options, class Train, class Summary>
void train_and_report(Options& o, Train&& train, Summary&& summary) {
  o.stop = &install_interrupt_flag();
  const auto r = train();
  report_interrupt(r.interrupted, r.steps_done, o.out_dir);
  summary(r);
  std::printf("model: %s\n", r.model_path.c_str());
}
// This process's command line, arguments joined by spaces (for the run's provenance).
std::string command_line();

}  // namespace attn::cli
