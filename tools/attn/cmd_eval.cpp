// attn eval: accuracy of a trained model per source length.
#include <cstdio>

#include "commands.h"
#include "common.h"

namespace attn::cli {

void add_eval_command(CLI::App& app) {
  struct Args {
    std::string model;
    std::string lengths = "5,10,20,40,80";
    train::EvalOptions options;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("eval", "Evaluate a model: token and sequence accuracy per source length");
  cmd->add_option("--model", args->model, "Checkpoint (model.safetensors)")->required();
  cmd->add_option("--eval-lengths", args->lengths, "Comma-separated source lengths")->capture_default_str();
  cmd->add_option("--samples", args->options.samples, "Examples per length")->capture_default_str();
  cmd->add_option("--beam", args->options.beam, "Beam width (1: greedy)")->capture_default_str();
  cmd->add_option("--seed", args->options.seed, "Seed of the evaluation data")->capture_default_str();
  cmd->add_flag("--json", args->json, "Print JSON instead of a table");
  add_threads_option(cmd);
  cmd->callback([args] {
    args->options.lengths = parse_lengths(args->lengths);
    if (args->options.samples < 1) throw UsageError("--samples must be >= 1");
    if (cmd_beam_invalid(args->options.beam)) throw UsageError("--beam must be >= 1, got " + std::to_string(args->options.beam));
    train::LoadedModel loaded = train::load_checkpoint(args->model);
    auto rows = train::evaluate(*loaded.model, data::parse_task(loaded.info.task), args->options);
    if (args->json) {
      std::printf("%s\n", train::accuracy_json(rows).c_str());
    } else {
      std::printf("%s", accuracy_table({loaded.info.config.attention}, {rows}).c_str());
    }
  });
}

ATTN_REGISTER_COMMAND(30, add_eval_command);

}  // namespace attn::cli
