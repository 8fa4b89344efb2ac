// attn train: trains a model for one of the registered tasks (train_tasks.h): the synthetic
// copy / reverse / sort (train_synthetic.cpp), SST-2 classifiers (train_sst2.cpp), translation
// and the character LM (train_text_tasks.cpp). Its options are registered here in groups
// (train_option_groups.h): an option outside the chosen task's groups is refused, and
// --config FILE reads them from a TOML file.
#include <cstdio>

#include "attn/distributed/communicator.h"
#include "attn/io/input_file.h"
#include "commands.h"
#include "common.h"
#include "train_option_groups.h"
#include "train_tasks.h"

namespace attn::cli {
namespace {

// The options of the shared helpers (add_model_options, add_training_options,
// add_threads_option, add_run_control_options) in their groups; where a default depends on
// the task, --help shows each task's default instead of one.
void place_shared_options(CLI::App* cmd, const TrainGroups& g, OptionGroups& groups) {
  auto place = [&](const char* name, const std::vector<const OptionGroup*>& in, const char* defaults = nullptr) {
    CLI::Option* option = cmd->get_option(name);
    if (defaults) option->default_str("")->description(option->get_description() + " (default: " + defaults + ")");
    groups.add(option, in);
  };
  // Their descriptions in the other commands speak of the RNN seq2seq model only.
  cmd->get_option("--heads")->description("Attention heads: --score multihead (dividing --hidden), the Transformers");
  cmd->get_option("--dropout")->description("Dropout: between RNN layers, in the Transformers and the classifiers");
  cmd->get_option("--task")->description("Task: " + train_task_names() + " (listed above)");
  place("--task", {&g.run});
  place("--steps", {&g.run}, "copy / reverse / sort 1500, translate 10000, charlm 3000, sst2 0: --epochs");
  place("--lr", {&g.run}, "1e-3; translate --model transformer 7e-4, sst2 --model transformer-cls 5e-4");
  place("--lr-schedule", {&g.run}, "copy / reverse / sort constant, translate inverse_sqrt, charlm and sst2 cosine");
  place("--warmup", {&g.run},
        "copy / reverse / sort 0, translate 200 (--model transformer 1000); charlm 200, sst2 100 "
        "(transformer-cls 200), each at most a tenth of the run");
  place("--clip", {&g.run}, "1; sst2 5");
  place("--seed", {&g.run});
  place("--log-every", {&g.run}, "50; translate and charlm 100");
  place("--eval-every", {&g.run},
        "copy / reverse / sort 250, translate 1000, charlm 500, sst2 200 (transformer-cls 300)");
  place("--dropout", {&g.run},
        "copy / reverse / sort and translate --model rnn 0, the Transformers 0.1, sst2 bilstm and bilstm-attn 0.5");
  place("--threads", {&g.run});
  place("--precision", {&g.run});
  for (const char* name : {"--resume", "--overwrite", "--max-minutes", "--save-every", "--deterministic-reduce",
                           "--bucket-mb", "--reduce-after-backward"})
    place(name, {&g.run});
  place("--min-len", {&g.synthetic});
  place("--eval-samples", {&g.synthetic});
  place("--batch", {&g.synthetic, &g.classifier, &g.lm});
  place("--max-len", {&g.synthetic, &g.translation, &g.lm}, "copy / reverse / sort 80, translate 100, charlm 128");
  place("--bucket", {&g.synthetic, &g.classifier}, "copy / reverse / sort 1 (off), sst2 50");
  place("--encoder", {&g.rnn, &g.pooling}, "gru; sst2 --model bilstm-attn: lstm | average, default lstm");
  place("--layers", {&g.rnn, &g.bilstm, &g.transformer_classifier},
        "1; sst2 --model transformer-cls: its encoder layers, 2 (or --enc-layers)");
  place("--emb", {&g.rnn, &g.bilstm}, "copy / reverse / sort 64, translate 256, sst2 300");
  place("--hidden", {&g.rnn, &g.bilstm}, "256; sst2 150");
  place("--heads", {&g.rnn, &g.transformer});
  for (const char* name : {"--bidirectional", "--attention", "--score", "--window", "--no-input-feeding", "--coverage",
                           "--coverage-loss", "--location-filters", "--location-width", "--location-sharpen",
                           "--location-smooth", "--monotonic-bias", "--monotonic-noise", "--chunk"})
    place(name, {&g.rnn});
  place("--pointer", {&g.rnn, &g.transformer_seq2seq});
  for (const char* name : {"--normalizer", "--alpha"}) place(name, {&g.rnn, &g.transformer, &g.pooling});
}

void add_classifier_options(CLI::App* cmd, ClassifierArgs& c, const TrainGroups& g, OptionGroups& groups) {
  groups.add(cmd->add_option("--model", c.model,
                             "sst2: bilstm (default) | bilstm-attn | transformer-cls; translate: rnn (default) | "
                             "transformer; charlm: transformer"),
             {&g.text_data});
  groups.add(
      cmd->add_option("--data", c.data, "The data folder (../shared/data, or its sst2/, multi30k/, tatoeba-fra-eng/)"),
      {&g.text_data, &g.asr});
  groups.add(cmd->add_option("--train-limit", c.train_limit, "Use the first N training examples (default 0: all)"),
             {&g.text_data, &g.asr});
  groups.add(
      cmd->add_option("--epochs", c.epochs,
                      "Epochs over the training split, unless --steps (default 4, transformer-cls 2). The model's "
                      "recipe in docs/results.md applies to what is not given: see the defaults of --lr, "
                      "--lr-schedule, --warmup, --eval-every, --d-model, --ffn"),
      {&g.classifier});
  groups.add(cmd->add_option("--min-freq", c.min_freq, "Vocabulary keeps words seen this often")->capture_default_str(),
             {&g.classifier});
  groups.add(cmd->add_option("--max-vocab", c.max_vocab, "Vocabulary size limit (0: all)")->capture_default_str(),
             {&g.classifier});
  groups.add(cmd->add_option("--weight-decay", c.weight_decay, "AdamW decoupled weight decay (0: Adam)")
                 ->capture_default_str(),
             {&g.classifier});
  groups.add(cmd->add_option("--model-config", c.model_config, "JSON object merged into the model configuration"),
             {&g.classifier});
  groups.add(cmd->add_option("--sst2-train", c.sst2_train,
                             "Training unit: phrases (every line of the training file: sentences and their "
                             "labelled phrases) | sentences (only the 6,885 full sentences, Jain & Wallace's protocol)")
                 ->capture_default_str(),
             {&g.classifier});
  groups.add(cmd->add_option("--embeddings", c.embeddings,
                             "Pretrained word vectors for the embedding: word2vec text or binary (*.bin), GloVe text, "
                             "fastText .vec (plain or .gz); their size must equal --emb (transformer-cls: --d-model)"),
             {&g.classifier});
  groups.add(cmd->add_flag("--freeze-embeddings", c.freeze_embeddings,
                           "Keep the embedding matrix fixed in training (with --embeddings)"),
             {&g.classifier});
  groups.add(cmd->add_option("--dev-limit", c.dev_limit, "Evaluate on the first N dev examples (default 0: all)"),
             {&g.classifier});
  groups.add(cmd->add_option("--pooling", c.pooling,
                             "Attention pooling: additive (v^T tanh(W h + b)) | dot (a learned query) | uniform "
                             "(the attention frozen to 1/n, Wiegreffe & Pinter's baseline); --encoder lstm | "
                             "average picks its encoder")
                 ->capture_default_str(),
             {&g.pooling});
  groups.add(cmd->add_option("--attention-from", c.attention_from,
                             "With --encoder average: pool with the attention of this bilstm-attn checkpoint M "
                             "(same vocabulary) on each sentence, held constant (Wiegreffe & Pinter's frozen "
                             "weights; the model has no pooling parameters of its own)"),
             {&g.pooling});
  groups.add(
      cmd->add_option("--d-model", c.d_model, "Transformer model size (default: translate 256, sst2 and charlm 128)"),
      {&g.transformer});
  groups.add(
      cmd->add_option("--ffn", c.ffn, "Transformer feed-forward size (default: translate 1024, sst2 and charlm 512)"),
      {&g.transformer});
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand(
      "train",
      "Train a model for one of the tasks below (--task). Options outside the task's groups are refused.\n\n"
      "Tasks:\n" +
          train_task_help());
  const TrainGroups& g = args->groups;
  OptionGroups& groups = args->registry;
  add_training_options(cmd, args->options);
  groups.add(cmd->add_option("--out", args->options.out_dir,
                             "Run directory (model.safetensors, last.safetensors, log.jsonl, config.toml); required"),
             {&g.run});
  groups.add(cmd->add_option("--config", args->config_file,
                             "Read options from a TOML file (name = value lines, as in a run's config.toml); options "
                             "on the command line override it")
                 ->configurable(false),
             {&g.run});
  groups.add(cmd->add_flag("--print-config", args->print_config,
                           "Print the config.toml this run would write (the options given, as --config reads them) "
                           "and exit without training or writing anything")
                 ->configurable(false),
             {&g.run});
  add_model_options(cmd, args->config, args->names);
  add_threads_option(cmd);
  add_precision_option(cmd);
  add_run_control_options(cmd, args->options);
  place_shared_options(cmd, g, groups);
  add_classifier_options(cmd, args->classifier, g, groups);
  add_text_task_options(cmd, args->text, g, groups);
  add_asr_options(cmd, args->asr, g, groups);
  cmd->callback([args, cmd] {
    io::refuse_outputs_over_inputs(false);  // a resumed run rewrites the last.safetensors it read
    if (!args->config_file.empty()) apply_config_file(cmd, args->config_file);
    const TrainTask& task = find_train_task(args->options.task);
    const TrainTarget target = train_target(task, args->classifier.model, cmd->count("--model") > 0);
    args->registry.refuse_outside(cmd, target, task.name);
    args->options.provenance = train::current_provenance(command_line());
    args->options.config_toml = run_config_text(cmd, args->options.provenance);
    if (args->print_config) {
      std::printf("%s", args->options.config_toml.c_str());
      return;
    }
    // One rank of `mpirun -np N attn train` (an error when built without MPI).
    // Rank 0 alone reports (the run loop keeps the others' progress and files quiet too).
    if (distributed::launched_by_mpi()) {
      args->options.communicator = &distributed::world();
      if (distributed::world().rank() != 0) {
        args->options.progress = nullptr;  // the tasks' messages too (loading, tokenizer)
        if (!std::freopen("/dev/null", "w", stdout))
          throw IoError("cannot silence the standard output of rank " + std::to_string(distributed::world().rank()));
      }
    }
    task.run(cmd, *args);
  });
}

ATTN_REGISTER_COMMAND(20, add_train_command);

}  // namespace attn::cli
