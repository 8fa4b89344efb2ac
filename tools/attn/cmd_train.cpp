// attn train: trains one seq2seq model on a synthetic task.
#include <cstdio>

#include "commands.h"
#include "common.h"

namespace attn::cli {

void add_train_command(CLI::App& app) {
  struct Args {
    models::Seq2SeqConfig config;
    train::TrainOptions options;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("train", "Train a seq2seq model on copy / reverse / sort");
  add_model_options(cmd, args->config);
  add_training_options(cmd, args->options);
  add_threads_option(cmd);
  cmd->add_option("--out", args->options.out_dir, "Run directory (model.safetensors, last.safetensors, log.jsonl)")
      ->required();
  cmd->add_flag("--resume", args->options.resume, "Continue the run in --out from last.safetensors");
  cmd->callback([args] {
    as_usage([&] {
      args->options.validate();
      args->config.validate();
    });
    args->options.stop = &install_interrupt_flag();
    train::TrainResult r = train::train_seq2seq(args->config, args->options);
    if (r.interrupted) {
      std::fprintf(stderr, "attn: interrupted at step %lld; saved %s/last.safetensors (continue with --resume)\n",
                   static_cast<long long>(r.steps_done), args->options.out_dir.c_str());
      throw Interrupted();
    }
    std::printf("trained %lld steps: final loss %.4f, best validation token accuracy %.1f %%, %.0f tokens/s\n",
                static_cast<long long>(r.steps_done), r.final_loss, 100 * r.best_token_accuracy, r.tokens_per_second);
    std::printf("model: %s\n", r.model_path.c_str());
  });
}

ATTN_REGISTER_COMMAND(20, add_train_command);

}  // namespace attn::cli
