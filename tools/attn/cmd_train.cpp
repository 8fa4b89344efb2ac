// attn train: trains one seq2seq model on a synthetic task (copy / reverse / sort), or a
// sentence classifier on SST-2 (--task sst2 --model bilstm|bilstm-attn|transformer-cls --data DIR).
#include <cstdio>

#include <nlohmann/json.hpp>

#include "attn/distributed/communicator.h"
#include "attn/train/classifier_trainer.h"
#include "commands.h"
#include "common.h"
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
  std::string pooling = "additive";  // bilstm-attn: additive | dot
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
    mc["encoder"] = given("--encoder") ? config.encoder : "lstm";
    mc["pooling"] = a.pooling;
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
      extra = nlohmann::json::parse(a.model_config);
    } catch (const nlohmann::json::exception& e) {
      throw UsageError(std::string("--model-config is not valid JSON: ") + e.what());
    }
    if (!extra.is_object()) throw UsageError("--model-config must be a JSON object, got " + extra.dump());
    mc.update(extra);
  }
  o.model_config = mc;
  return o;
}

// A UsageError for the first of `flags` given on the command line: it would be ignored.
void refuse_unused(CLI::App* cmd, std::initializer_list<const char*> flags, const std::string& context) {
  for (const char* flag : flags)
    if (cmd->count(flag)) throw UsageError(std::string(flag) + " does not apply to " + context);
}

void run_classifier(CLI::App* cmd, const models::Seq2SeqConfig& config, const train::TrainOptions& t,
                    const ClassifierArgs& a, const TextTaskArgs& text) {
  if (a.model != "bilstm-attn") refuse_unused(cmd, {"--encoder", "--pooling"}, "--task sst2 without --model bilstm-attn");
  refuse_unused(cmd,
                {"--bidirectional", "--attention", "--score", "--window", "--no-input-feeding",
                 "--min-len", "--max-len", "--eval-samples", "--src", "--tgt", "--tokenizer", "--vocab-size",
                 "--max-tokens", "--max-sentences", "--label-smoothing", "--eval-sentences",
                 "--dec-layers"},
                "--task sst2");
  if (a.model == "bilstm" || a.model == "bilstm-attn")
    refuse_unused(cmd, {"--d-model", "--ffn", "--enc-layers", "--norm", "--positions", "--activation", "--heads"},
                  "--model " + a.model);
  if (a.model == "transformer-cls") refuse_unused(cmd, {"--emb", "--hidden"}, "--model transformer-cls (--d-model)");
  if (a.data.empty()) throw UsageError("--task sst2 needs --data DIR (the folder holding sst2/)");
  train::ClassifierTrainOptions o = classifier_options(cmd, config, t, a, text);
  as_usage([&] {
    o.validate();
    // A bad model configuration is a usage error too: build it once with a stand-in vocabulary.
    models::make_classifier(o.model, models::classifier_config_with_vocab(o.model, o.model_config, 3, 2));
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

}  // namespace

void add_train_command(CLI::App& app) {
  struct Args {
    models::Seq2SeqConfig config;
    train::TrainOptions options;
    ClassifierArgs classifier;
    TextTaskArgs text;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "train", "Train a model: seq2seq on copy / reverse / sort, a classifier on SST-2 (--task sst2), translation on Multi30k (--task translate) or a character LM on Tatoeba (--task charlm)");
  add_model_options(cmd, args->config);
  add_training_options(cmd, args->options);
  add_threads_option(cmd);
  cmd->add_option("--out", args->options.out_dir, "Run directory (model.safetensors, last.safetensors, log.jsonl)")
      ->required();
  add_run_control_options(cmd, args->options);
  ClassifierArgs& c = args->classifier;
  const char* sst2 = "SST-2";
  cmd->add_option("--model", c.model, "--task sst2: bilstm | bilstm-attn | transformer-cls; translate: rnn | transformer; charlm: transformer")->capture_default_str()->group(sst2);
  cmd->add_option("--data", c.data, "--task sst2|translate|charlm: the data folder (../shared/data, or its sst2/, multi30k/, tatoeba-fra-eng/)")->group(sst2);
  cmd->add_option("--epochs", c.epochs,
                  "--task sst2: epochs over the training split (unless --steps; default 4, transformer-cls 2). "
                  "Without --lr, --lr-schedule, --warmup, --d-model, --ffn the model's recipe in docs/results.md "
                  "applies: bilstm lr 1e-3, transformer-cls lr 5e-4, d-model 128, ffn 512; cosine decay after 100 "
                  "(transformer-cls 200) warm-up steps, at most a tenth of the run; --eval-every 200 (transformer-cls 300)")
      ->group(sst2);
  cmd->add_option("--pooling", c.pooling,
                  "--model bilstm-attn: attention pooling additive (v^T tanh(W h + b)) | dot (a learned query); "
                  "--encoder lstm | average picks its encoder")
      ->capture_default_str()->group(sst2);
  cmd->add_option("--min-freq", c.min_freq, "--task sst2: vocabulary keeps words seen this often")
      ->capture_default_str()->group(sst2);
  cmd->add_option("--max-vocab", c.max_vocab, "--task sst2: vocabulary size limit (0: all)")->capture_default_str()->group(sst2);
  cmd->add_option("--weight-decay", c.weight_decay, "--task sst2: AdamW decoupled weight decay (0: Adam)")
      ->capture_default_str()->group(sst2);
  cmd->add_option("--d-model", c.d_model, "Transformer model size (default: translate 256, sst2 and charlm 128)")->group(sst2);
  cmd->add_option("--ffn", c.ffn, "Transformer feed-forward size (default: translate 1024, sst2 and charlm 512)")->group(sst2);
  cmd->add_option("--model-config", c.model_config, "--task sst2: JSON object merged into the model configuration")
      ->group(sst2);
  cmd->add_option("--train-limit", c.train_limit, "--task sst2|translate|charlm: use the first N training examples (0: all)")->group(sst2);
  cmd->add_option("--dev-limit", c.dev_limit, "--task sst2: evaluate on the first N dev examples (0: all)")->group(sst2);
  add_text_task_options(cmd, args->text);
  cmd->callback([args, cmd] {
    args->options.provenance = train::current_provenance(command_line());
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
    if (args->options.task == "sst2") {
      run_classifier(cmd, args->config, args->options, args->classifier, args->text);
      return;
    }
    if (args->options.task == "translate" || args->options.task == "charlm") {
      const ClassifierArgs& c = args->classifier;
      const SharedTrainArgs shared{c.model, c.data, c.d_model, c.ffn, c.train_limit};
      if (args->options.task == "translate")
        run_translation(cmd, args->config, args->options, shared, args->text);
      else
        run_char_lm(cmd, args->config, args->options, shared, args->text);
      return;
    }
    as_usage([&] {
      args->options.validate();
      args->config.validate();
    });
    args->options.stop = &install_interrupt_flag();
    train::TrainResult r = train::train_seq2seq(args->config, args->options);
    report_interrupt(r.interrupted, r.steps_done, args->options.out_dir);
    std::printf("trained %lld steps: final loss %.4f, best validation token accuracy %.1f %%, %.0f tokens/s\n",
                static_cast<long long>(r.steps_done), r.final_loss, 100 * r.best_token_accuracy, r.tokens_per_second);
    std::printf("model: %s\n", r.model_path.c_str());
  });
}

ATTN_REGISTER_COMMAND(20, add_train_command);

}  // namespace attn::cli
