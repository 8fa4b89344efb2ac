// attn train --task copy | reverse | sort: an RNN encoder-decoder on a synthetic task (no
// data; data/tasks.h), registered in the task registry (train_tasks.h).
#include <cstdio>

#include "attn/data/tasks.h"
#include "attn/models/memory_estimate.h"
#include "attn/train/seq2seq_trainer.h"
#include "train_tasks.h"

namespace attn::cli {
namespace {

void run_synthetic(CLI::App*, TrainArgs& args) {
  const models::Seq2SeqConfig& config = args.config;
  const train::TrainOptions& o = args.options;
  as_usage([&] {
    o.validate();
    args.names.apply(args.config);
    config.validate();
    // A model or a batch beyond memory is an impossible request: refused before anything
    // is written (docs/reliability.md, exit codes).
    train::check_run_memory(config, o);
  });
  args.options.stop = &install_interrupt_flag();
  train::TrainResult r = train::train_seq2seq(config, o);
  report_interrupt(r.interrupted, r.steps_done, o.out_dir);
  std::printf("trained %lld steps: final loss %.4f, best validation token accuracy %.1f %%, %.0f tokens/s\n",
              static_cast<long long>(r.steps_done), r.final_loss, 100 * r.best_token_accuracy, r.tokens_per_second);
  std::printf("model: %s\n", r.model_path.c_str());
}

// The three tasks share the model and the run: one registration each.
const bool kRegistered = [] {
  const char* const tasks[][2] = {{"copy", "copy a random string of symbols (synthetic, no data)"},
                                  {"reverse", "reverse it (synthetic)"},
                                  {"sort", "sort it (synthetic)"}};
  int order = 10;
  for (const auto& [name, summary] : tasks)
    RegisterTask({.order = order++,
                  .name = name,
                  .summary = summary,
                  .writes = decode::CheckpointKind::seq2seq,
                  .models = {{"", TrainTarget::seq2seq, {ExportTarget::torch}}},  // the RNN seq2seq model's groups
                  .run = run_synthetic});
  return true;
}();

}  // namespace

}  // namespace attn::cli
