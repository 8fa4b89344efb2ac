#pragma once
// The task registry of `attn train` and `attn export`. Each task is described once, in the file
// that runs it: its --task name, a line for --help, the checkpoint kind its runs write, its
// --model values (each with the option groups that apply, train_option_groups.h, and the
// targets `attn export --to` writes its checkpoints as) and the function that runs it.
// `attn train` finds the task here, checks its options against the model's groups and calls
// the run; `attn train --help` lists the registered tasks. `attn export` asks export_targets()
// what a checkpoint goes to. No --task string is compared anywhere else.
//
// Adding a task (docs/architecture.md, "Adding a task"): write its run in one file and register
// it there,
//   ATTN_REGISTER_TASK({.order = 32, .name = "summarize", .summary = "...",
//                       .writes = decode::CheckpointKind::translation,
//                       .models = {{"rnn", TrainTarget::translate_rnn, {ExportTarget::torch}}, ...},
//                       .run = run_summarization});
// and give its options a group (train_option_groups.cpp) when it has options of its own.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "attn/decode/checkpoint_kind.h"
#include "attn/models/seq2seq.h"
#include "attn/models/translator.h"
#include "attn/train/run.h"
#include "common.h"
#include "train_option_groups.h"
#include "train_text_tasks.h"

namespace attn::cli {

// The classifier options (--task sst2) and the options shared by the text tasks (--model,
// --data, --train-limit, --d-model, --ffn).
struct ClassifierArgs {
  std::string model = "bilstm";
  std::string data;
  std::string model_config;  // JSON merged over the options below
  int epochs = 4;            // transformer-cls: 2 unless given
  int min_freq = 1;
  int64_t max_vocab = 0;
  float weight_decay = 0.0f;
  int64_t d_model = 256, ffn = 1024;
  int64_t train_limit = 0, dev_limit = 0;
  std::string sst2_train = "phrases";
  std::string embeddings;
  bool freeze_embeddings = false;
  std::string pooling = "additive";  // bilstm-attn: additive | dot | uniform
  std::string attention_from;        // bilstm-attn --encoder average: pool with this model's attention
};

// The options of --task asr alone (train_asr.cpp).
struct AsrArgs {
  int reduction = 4;
  int projection = 256;
  int listener_hidden = 256;
};
// Adds --reduction --projection --listener-hidden in the ASR group.
void add_asr_options(CLI::App* cmd, AsrArgs& args, const TrainGroups& g, OptionGroups& groups);

// Everything `attn train` parsed; a task's run reads the parts it needs.
struct TrainArgs {
  models::Seq2SeqConfig config;
  ModelChoiceNames names;  // parsed into config for the seq2seq tasks (translate's rnn too)
  train::TrainOptions options;
  ClassifierArgs classifier;
  TextTaskArgs text;
  AsrArgs asr;
  std::string config_file;
  bool print_config = false;
  TrainGroups groups;
  OptionGroups registry;
};

// The Transformer encoder-decoder configuration of the text tasks' options (--d-model --heads
// --ffn --enc-layers --dec-layers --dropout (default 0.1) --norm --positions --activation --seed;
// train_text_tasks.cpp).
// The RNN translator configuration of the text tasks (translate, summarize, g2p): the seq2seq
// options with --emb `emb`, --hidden 256 and --dropout 0 unless given, max_src_len and --seed.
nlohmann::json rnn_translator_config(CLI::App* cmd, models::Seq2SeqConfig c, int64_t emb, int max_src_len,
                                     uint64_t seed);
// A usage error now, before any data is read, when `config` makes no translator of `kind`.
void check_translator_config(models::TranslatorKind kind, const nlohmann::json& config);
nlohmann::json transformer_config(CLI::App* cmd, const models::Seq2SeqConfig& c, const train::TrainOptions& t,
                                  const ClassifierArgs& s, const TextTaskArgs& a);

// What `attn export --to` writes (cmd_export.cpp): a plain-PyTorch module, a CTranslate2 model.
enum class ExportTarget { torch, ctranslate2 };

struct TaskModel {
  std::string name;                        // the --model value; "" for a task without --model
  TrainTarget target;                      // where the option groups apply
  std::vector<ExportTarget> exports = {};  // what `attn export --to` makes of its checkpoints
};

struct TrainTask {
  int order = 0;                  // position in --help's list
  std::string name;               // --task NAME
  std::string summary;            // one line for --help
  decode::CheckpointKind writes;  // what its runs write (model.safetensors' format)
  std::vector<TaskModel> models;  // its --model values; the first is the default
  void (*run)(CLI::App* cmd, TrainArgs& args) = nullptr;
};

struct RegisterTask {
  explicit RegisterTask(TrainTask task);
};

// Every registered task, in --help's order.
const std::vector<TrainTask>& train_tasks();
// The task named `name`; UsageError naming the registered tasks otherwise:
//   "unknown task 'nope' (valid: copy, reverse, sort, sst2, translate, summarize, g2p, asr, charlm)"
const TrainTask& find_train_task(const std::string& name);
// "copy, reverse, sort, sst2, translate, charlm".
std::string train_task_names();
// "  copy        the synthetic copy task ...\n  sst2 ..." (train --help's list).
std::string train_task_help();

// The target of --task `task` --model `model` (`model_given` false: the task's default model).
// UsageError naming the task's models when it has no such model.
TrainTarget train_target(const TrainTask& task, const std::string& model, bool model_given);
// "--task translate --model rnn", "--task copy": how a command line selects `target`
// (`task` names the task given, for targets that several tasks share).
std::string target_flags(TrainTarget target, const std::string& task);

// --- attn export's targets, from the registrations ---

// Every target, in --help's order.
const std::vector<ExportTarget>& all_export_targets();
// "torch", "ctranslate2": the --to value.
const char* export_target_name(ExportTarget target);
// The target whose --to value is `name`; UsageError naming the targets otherwise.
ExportTarget export_target(const std::string& name);

// A checkpoint records its kind and the --model it was trained with (a translation's "kind":
// "rnn" | "transformer"; "" for a kind that records none, as the synthetic tasks' seq2seq), not
// its task: the targets of the tasks that write `kind` with --model `model` (empty for none).
std::vector<ExportTarget> export_targets(decode::CheckpointKind kind, const std::string& model);
// Whether some model of `kind` goes to `target` (to refuse a checkpoint before reading its model).
bool exports_kind(decode::CheckpointKind kind, ExportTarget target);
// How a command line makes what goes to `target`, tasks with the same models together:
//   "--task copy | reverse | sort, --task translate | summarize --model rnn | transformer"
std::string export_sources(ExportTarget target);
// Error naming two registrations in `tasks` that write the same kind with the same --model but
// give it different export targets (export_targets() could not tell which holds).
void check_export_targets(const std::vector<TrainTask>& tasks);

}  // namespace attn::cli

#define ATTN_REGISTER_TASK(...) \
  static const ::attn::cli::RegisterTask ATTN_CLI_CONCAT(attn_train_task_, __LINE__)(::attn::cli::TrainTask __VA_ARGS__)
