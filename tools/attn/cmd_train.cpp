// attn train: trains one seq2seq model on a synthetic task (copy / reverse / sort), a
// sentence classifier on SST-2 (--task sst2 --model bilstm|bilstm-attn|transformer-cls --data DIR),
// a translation model (--task translate, train_text_tasks.cpp) or a character LM (--task charlm).
// Its options are registered here in groups (train_option_groups.h): an option outside the
// chosen task's groups is refused, and --config FILE reads them from a TOML file.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "attn/io/input_file.h"
#include "attn/json.h"
#include "attn/models/memory_estimate.h"
#include "attn/distributed/communicator.h"
#include "attn/train/classifier_trainer.h"
#include "commands.h"
#include "common.h"
#include "train_option_groups.h"
#include "train_text_tasks.h"

namespace attn::cli {
namespace {

struct ClassifierArgs {
  std::string model = "bilstm";
  std::string data;
  std::string model_config;  // JSON merged over the options below
  int epochs = 4;  // transformer-cls: 2 unless given
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

// The classifier run the parsed options describe. Options shared with the seq2seq trainer
// (--steps --batch --lr --lr-schedule --warmup --clip --seed --emb --hidden --layers
// --dropout --eval-every --bucket --heads) and --epochs, --d-model, --ffn keep the model's
// recipe in docs/results.md unless given: bilstm 4 epochs, transformer-cls 2 epochs at
// lr 5e-4 with d_model 128 and ffn 512; both cosine decay after a warm-up of 100 / 200 steps
// (at most a tenth of the run, so that short runs still decay); dev evaluation every 200
// (transformer-cls 300) steps.
train::ClassifierTrainOptions classifier_options(CLI::App* cmd, const models::Seq2SeqConfig& config,
                                                 const train::TrainOptions& t, const ClassifierArgs& a,
                                                 const TextTaskArgs& text) {
  auto given = [cmd](const char* flag) { return cmd->count(flag) > 0; };
  const bool transformer = a.model == "transformer-cls";
  train::ClassifierTrainOptions o;
  o.data_dir = a.data;
  o.model = a.model;
  o.min_freq = a.min_freq;
  o.max_size = a.max_vocab;
  o.epochs = given("--epochs") ? a.epochs : (transformer ? 2 : 4);
  o.steps = given("--steps") ? t.steps : 0;
  o.batch = t.batch;
  o.lr = given("--lr") ? t.lr : (transformer ? 5e-4f : 1e-3f);
  o.weight_decay = a.weight_decay;
  o.lr_schedule = given("--lr-schedule") ? t.lr_schedule : "cosine";
  o.warmup = given("--warmup") ? t.warmup : (transformer ? 200 : 100);
  o.cap_warmup = !given("--warmup");
  if (given("--clip")) o.clip = t.clip;
  o.seed = t.seed;
  o.log_every = t.log_every;
  // The documented recipes' evaluation interval (docs/results.md): the best dev model of a
  // run is picked from these validations, so once an epoch (4 picks) loses about 2 points.
  o.eval_every = given("--eval-every") ? t.eval_every : (transformer ? 300 : 200);
  if (given("--bucket")) o.bucket = t.bucket;
  o.train_limit = a.train_limit;
  o.sst2_train = a.sst2_train;
  o.embeddings = a.embeddings;
  o.freeze_embeddings = a.freeze_embeddings;
  o.dev_limit = a.dev_limit;
  copy_run_controls(t, o);
  nlohmann::json mc = nlohmann::json::object();
  if (a.model == "bilstm" || a.model == "bilstm-attn") {
    mc["emb"] = given("--emb") ? config.emb : 300;
    mc["hidden"] = given("--hidden") ? config.hidden : 150;
    mc["layers"] = config.layers;
    mc["dropout"] = given("--dropout") ? config.dropout : 0.5f;
  }
  if (a.model == "bilstm-attn") {
    mc["encoder"] = given("--encoder") ? cmd->get_option("--encoder")->as<std::string>() : "lstm";
    mc["pooling"] = a.pooling;
    if (!a.attention_from.empty()) {
      // The weights are M's: the model keeps no pooling parameters of its own.
      if (given("--pooling") && a.pooling != "uniform")
        throw UsageError("--attention-from replaces the pooling weights; drop --pooling " + a.pooling);
      mc["pooling"] = "uniform";
      o.attention_from = a.attention_from;
    }
  } else if (a.model == "transformer-cls") {
    mc["d_model"] = given("--d-model") ? a.d_model : 128;
    mc["heads"] = config.heads;
    mc["ffn"] = given("--ffn") ? a.ffn : 512;
    if (given("--layers") && given("--enc-layers") && config.layers != text.encoder_layers)
      throw UsageError("--layers and --enc-layers both set transformer-cls's encoder layers; give one");
    mc["encoder_layers"] = given("--enc-layers") ? text.encoder_layers : given("--layers") ? config.layers : 2;
    mc["dropout"] = given("--dropout") ? config.dropout : 0.1f;
    if (text.norm != "pre" && text.norm != "post") throw UsageError("--norm must be pre or post, got '" + text.norm + "'");
    mc["norm_first"] = text.norm == "pre";
    mc["positions"] = text.positions;
    mc["activation"] = text.activation;
  }
  if (!a.model_config.empty()) {
    nlohmann::json extra;
    try {
      extra = parse_json(a.model_config, "--model-config");
    } catch (const IoError& e) {
      throw UsageError(e.what());
    }
    if (!extra.is_object()) throw UsageError("--model-config must be a JSON object, got " + extra.dump());
    mc.update(extra);
  }
  o.model_config = mc;
  return o;
}

void run_classifier(CLI::App* cmd, const models::Seq2SeqConfig& config, const train::TrainOptions& t,
                    const ClassifierArgs& a, const TextTaskArgs& text) {
  train::ClassifierTrainOptions o = classifier_options(cmd, config, t, a, text);
  o.data_dir = data_or_default(a.data, "sst2", "--task sst2 needs --data DIR (the folder holding sst2/)");
  as_usage([&] {
    o.validate();
    // A bad model configuration is a usage error too: build it once with a stand-in vocabulary.
    models::make_classifier(o.model, models::classifier_config_with_vocab(o.model, o.model_config, 3, 2));
    if (!o.attention_from.empty()) train::attention_source(o);  // M exists, is bilstm-attn, has our vocabulary
  });
  o.stop = &install_interrupt_flag();
  train::ClassifierTrainResult r = train::train_classifier(o);
  report_interrupt(r.interrupted, r.steps_done, o.out_dir);
  std::printf("trained %lld steps in %.0f s: final loss %.4f, best dev accuracy %.2f %% (step %lld), %.0f examples/s, "
              "vocabulary %lld\n",
              static_cast<long long>(r.steps_done), r.seconds, r.final_loss, 100 * r.best_dev_accuracy,
              static_cast<long long>(r.best_step), r.examples_per_second, static_cast<long long>(r.vocab_size));
  std::printf("model: %s\n", r.model_path.c_str());
}

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
  place("--eval-every", {&g.run}, "copy / reverse / sort 250, translate 1000, charlm 500, sst2 200 (transformer-cls 300)");
  place("--dropout", {&g.run},
        "copy / reverse / sort and translate --model rnn 0, the Transformers 0.1, sst2 bilstm and bilstm-attn 0.5");
  place("--threads", {&g.run});
  for (const char* name : {"--resume", "--overwrite", "--max-minutes", "--save-every", "--deterministic-reduce", "--bucket-mb",
                           "--reduce-after-backward"})
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
  for (const char* name : {"--bidirectional", "--attention", "--score", "--window", "--no-input-feeding",
                           "--location-filters", "--location-width", "--location-sharpen", "--location-smooth"})
    place(name, {&g.rnn});
}

void add_classifier_options(CLI::App* cmd, ClassifierArgs& c, const TrainGroups& g, OptionGroups& groups) {
  groups.add(cmd->add_option("--model", c.model,
                             "sst2: bilstm (default) | bilstm-attn | transformer-cls; translate: rnn (default) | "
                             "transformer; charlm: transformer"),
             {&g.text_data});
  groups.add(cmd->add_option("--data", c.data,
                             "The data folder (../shared/data, or its sst2/, multi30k/, tatoeba-fra-eng/)"),
             {&g.text_data});
  groups.add(cmd->add_option("--train-limit", c.train_limit, "Use the first N training examples (default 0: all)"),
             {&g.text_data});
  groups.add(cmd->add_option("--epochs", c.epochs,
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
  groups.add(cmd->add_option("--d-model", c.d_model, "Transformer model size (default: translate 256, sst2 and charlm 128)"),
             {&g.transformer});
  groups.add(cmd->add_option("--ffn", c.ffn, "Transformer feed-forward size (default: translate 1024, sst2 and charlm 512)"),
             {&g.transformer});
}

}  // namespace

void add_train_command(CLI::App& app) {
  struct Args {
    models::Seq2SeqConfig config;
    ModelChoiceNames names;  // parsed into config for the seq2seq tasks (translate's rnn too)
    train::TrainOptions options;
    ClassifierArgs classifier;
    TextTaskArgs text;
    std::string config_file;
    bool print_config = false;
    TrainGroups groups;
    OptionGroups registry;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "train", "Train a model: seq2seq on copy / reverse / sort, a classifier on SST-2 (--task sst2), translation on "
               "Multi30k (--task translate) or a character LM on Tatoeba (--task charlm). Options outside the task's "
               "groups are refused.");
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
  add_run_control_options(cmd, args->options);
  place_shared_options(cmd, g, groups);
  add_classifier_options(cmd, args->classifier, g, groups);
  add_text_task_options(cmd, args->text, g, groups);
  cmd->callback([args, cmd] {
    io::refuse_outputs_over_inputs(false);  // a resumed run rewrites the last.safetensors it read
    if (!args->config_file.empty()) apply_config_file(cmd, args->config_file);
    const std::string& task = args->options.task;
    const TrainTarget target = train_target(task, args->classifier.model, cmd->count("--model") > 0);
    args->registry.refuse_outside(cmd, target, task);
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
    if (task == "sst2") {
      run_classifier(cmd, args->config, args->options, args->classifier, args->text);
      return;
    }
    if (task == "translate" || task == "charlm") {
      if (task == "translate") as_usage([&] { args->names.apply(args->config); });
      const ClassifierArgs& c = args->classifier;
      const SharedTrainArgs shared{c.model, c.data, c.d_model, c.ffn, c.train_limit};
      if (task == "translate")
        run_translation(cmd, args->config, args->options, shared, args->text);
      else
        run_char_lm(cmd, args->config, args->options, shared, args->text);
      return;
    }
    const models::Seq2SeqConfig& config = args->config;
    const train::TrainOptions& o = args->options;
    as_usage([&] {
      o.validate();
      args->names.apply(args->config);
      config.validate();
      // A model or a batch beyond memory is an impossible request: refused before anything
      // is written (docs/reliability.md, exit codes).
      train::check_run_memory(config, o);
    });
    args->options.stop = &install_interrupt_flag();
    train::TrainResult r = train::train_seq2seq(config, o);
    report_interrupt(r.interrupted, r.steps_done, o.out_dir);
    std::printf("trained %lld steps: final loss %.4f, best validation token accuracy %.1f %%, %.0f tokens/s\n",
                static_cast<long long>(r.steps_done), r.final_loss, 100 * r.best_token_accuracy, r.tokens_per_second);
    std::printf("model: %s\n", r.model_path.c_str());
  });
}

ATTN_REGISTER_COMMAND(20, add_train_command);

}  // namespace attn::cli
