// attn train --task asr: listen-attend-spell speech recognition on spoken sentences
// (train/asr_trainer.h), registered in the task registry (train_tasks.h). The speller takes the
// RNN options (--attention, --score additive | location_aware | monotonic | mocha, --hidden,
// --emb, --layers, --encoder for its cell); the listener --reduction, --projection and
// --listener-hidden.
#include <cstdio>

#include "attn/train/asr_trainer.h"
#include "train_error_rate_tasks.h"
#include "train_tasks.h"

namespace attn::cli {

void add_asr_options(CLI::App* cmd, AsrArgs& a, const TrainGroups& g, OptionGroups& groups) {
  groups.add(
      cmd->add_option("--reduction", a.reduction, "The listener's time reduction: 4 | 8 (2 also: one pyramid layer)")
          ->capture_default_str(),
      {&g.asr});
  groups.add(cmd->add_option("--projection", a.projection, "The listener's input projection of each frame")
                 ->capture_default_str()
                 ->check(integer_at_least(1)),
             {&g.asr});
  groups.add(cmd->add_option("--listener-hidden", a.listener_hidden, "The listener's BiLSTM size per direction")
                 ->capture_default_str()
                 ->check(integer_at_least(1)),
             {&g.asr});
}

namespace {

void run_asr(CLI::App* cmd, TrainArgs& args) {
  if (!given(cmd, "--encoder")) args.names.encoder = "lstm";  // LAS's speller
  as_usage([&] { args.names.apply(args.config); });
  const train::TrainOptions& t = args.options;
  const TextTaskArgs& a = args.text;
  if (given(cmd, "--bidirectional"))
    throw UsageError(
        "--bidirectional does not apply to --task asr (the listener is always bidirectional, the speller "
        "reads left to right)");
  if (args.classifier.data.empty())
    throw UsageError(
        "--task asr needs --data DIR (the folder with train.speech and dev.speech that attn data speech "
        "writes)");
  train::AsrOptions o;
  o.data_dir = args.classifier.data;
  o.train_limit = args.classifier.train_limit;
  o.eval_utterances = a.eval_sentences;
  o.lr = t.lr;
  copy_given_run_options(cmd, a, t, o);
  models::AsrConfig config;
  config.reduction = args.asr.reduction;
  config.projection = args.asr.projection;
  config.listener_hidden = args.asr.listener_hidden;
  config.speller = args.config;
  if (!given(cmd, "--dropout")) config.speller.dropout = 0.0f;
  config.speller.seed = t.seed;
  as_usage([&] {
    o.validate();
    models::AsrConfig probe = config;
    probe.speller.vocab = 16;
    probe.validate();
  });
  train_and_report(
      o, [&] { return train::train_asr(config, o); },
      [](const train::AsrResult& r) {
        print_error_rate_summary(r, "CER", r.best_val_cer, r.dev_utterances, "utterances");
      });
}

}  // namespace

ATTN_REGISTER_TASK({.order = 37,
                    .name = "asr",
                    .summary = "speech recognition on spoken sentences (--data DIR with train.speech, dev.speech): "
                               "listen-attend-spell",
                    .writes = decode::CheckpointKind::asr,
                    .models = {{"", TrainTarget::asr}},
                    .run = run_asr});

}  // namespace attn::cli
