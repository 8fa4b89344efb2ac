// attn train --task sst2: a sentence classifier on SST-2 (--model bilstm | bilstm-attn |
// transformer-cls, --data DIR), registered in the task registry (train_tasks.h).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "attn/json.h"
#include "attn/train/classifier_trainer.h"
#include "train_tasks.h"

namespace attn::cli {
namespace {

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
  const bool transformer = a.model == "transformer-cls";
  train::ClassifierTrainOptions o;
  o.data_dir = a.data;
  o.model = a.model;
  o.min_freq = a.min_freq;
  o.max_size = a.max_vocab;
  o.epochs = given(cmd, "--epochs") ? a.epochs : (transformer ? 2 : 4);
  o.steps = given(cmd, "--steps") ? t.steps : 0;
  o.batch = t.batch;
  o.lr = given(cmd, "--lr") ? t.lr : (transformer ? 5e-4f : 1e-3f);
  o.weight_decay = a.weight_decay;
  o.lr_schedule = given(cmd, "--lr-schedule") ? t.lr_schedule : "cosine";
  o.warmup = given(cmd, "--warmup") ? t.warmup : (transformer ? 200 : 100);
  o.cap_warmup = !given(cmd, "--warmup");
  if (given(cmd, "--clip")) o.clip = t.clip;
  o.seed = t.seed;
  o.log_every = t.log_every;
  // The documented recipes' evaluation interval (docs/results.md): the best dev model of a
  // run is picked from these validations, so once an epoch (4 picks) loses about 2 points.
  o.eval_every = given(cmd, "--eval-every") ? t.eval_every : (transformer ? 300 : 200);
  if (given(cmd, "--bucket")) o.bucket = t.bucket;
  o.train_limit = a.train_limit;
  o.sst2_train = a.sst2_train;
  o.embeddings = a.embeddings;
  o.freeze_embeddings = a.freeze_embeddings;
  o.dev_limit = a.dev_limit;
  copy_run_controls(t, o);
  nlohmann::json mc = nlohmann::json::object();
  if (a.model == "bilstm" || a.model == "bilstm-attn") {
    mc["emb"] = given(cmd, "--emb") ? config.emb : 300;
    mc["hidden"] = given(cmd, "--hidden") ? config.hidden : 150;
    mc["layers"] = config.layers;
    mc["dropout"] = given(cmd, "--dropout") ? config.dropout : 0.5f;
  }
  if (a.model == "bilstm-attn") {
    mc["encoder"] = given(cmd, "--encoder") ? cmd->get_option("--encoder")->as<std::string>() : "lstm";
    mc["pooling"] = a.pooling;
    if (!a.attention_from.empty()) {
      // The weights are M's: the model keeps no pooling parameters of its own.
      if (given(cmd, "--pooling") && a.pooling != "uniform")
        throw UsageError("--attention-from replaces the pooling weights; drop --pooling " + a.pooling);
      mc["pooling"] = "uniform";
      o.attention_from = a.attention_from;
    }
  } else if (a.model == "transformer-cls") {
    mc["d_model"] = given(cmd, "--d-model") ? a.d_model : 128;
    mc["heads"] = config.heads;
    mc["ffn"] = given(cmd, "--ffn") ? a.ffn : 512;
    if (given(cmd, "--layers") && given(cmd, "--enc-layers") && config.layers != text.encoder_layers)
      throw UsageError("--layers and --enc-layers both set transformer-cls's encoder layers; give one");
    mc["encoder_layers"] = given(cmd, "--enc-layers") ? text.encoder_layers
                           : given(cmd, "--layers")   ? config.layers
                                                      : 2;
    mc["dropout"] = given(cmd, "--dropout") ? config.dropout : 0.1f;
    if (text.norm != "pre" && text.norm != "post")
      throw UsageError("--norm must be pre or post, got '" + text.norm + "'");
    mc["norm_first"] = text.norm == "pre";
    mc["positions"] = text.positions;
    mc["activation"] = text.activation;
  }
  if (a.model == "bilstm-attn" || a.model == "transformer-cls") add_normalizer_json(cmd, config, mc);
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

void run_classifier(CLI::App* cmd, TrainArgs& args) {
  const ClassifierArgs& a = args.classifier;
  train::ClassifierTrainOptions o = classifier_options(cmd, args.config, args.options, a, args.text);
  o.data_dir = data_or_default(a.data, "sst2", "--task sst2 needs --data DIR (the folder holding sst2/)");
  as_usage([&] {
    o.validate();
    // A bad model configuration is a usage error too: build it once with a stand-in vocabulary.
    models::make_classifier(o.model, models::classifier_config_with_vocab(o.model, o.model_config, 3, 2));
    if (!o.attention_from.empty()) train::attention_source(o);  // M exists, is bilstm-attn, has our vocabulary
  });
  train_and_report(
      o, [&] { return train::train_classifier(o); },
      [](const train::ClassifierTrainResult& r) {
        std::printf(
            "trained %lld steps in %.0f s: final loss %.4f, best dev accuracy %.2f %% (step %lld), %.0f "
            "examples/s, vocabulary %lld\n",
            static_cast<long long>(r.steps_done), r.seconds, r.final_loss, 100 * r.best_dev_accuracy,
            static_cast<long long>(r.best_step), r.examples_per_second, static_cast<long long>(r.vocab_size));
      });
}

}  // namespace

ATTN_REGISTER_TASK(
    {.order = 20,
     .name = "sst2",
     .summary = "sentence sentiment on SST-2 (--data DIR): --model bilstm | bilstm-attn | transformer-cls",
     .writes = decode::CheckpointKind::classifier,
     .models = {{"bilstm", TrainTarget::sst2_bilstm},
                {"bilstm-attn", TrainTarget::sst2_bilstm_attn},
                {"transformer-cls", TrainTarget::sst2_transformer_cls}},
     .run = run_classifier});

}  // namespace attn::cli
