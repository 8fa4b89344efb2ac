// attn align: the attention heatmap of one decoded input.
#include <cstdio>

#include "attn/data/tasks.h"
#include "commands.h"
#include "common.h"

namespace attn::cli {

void add_align_command(CLI::App& app) {
  struct Args {
    std::string model, input, out = "align.png";
    int beam = 1;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("align", "Draw the attention weights of one decoded input as a heatmap");
  cmd->add_option("--model", args->model, "Checkpoint (model.safetensors)")->required();
  cmd->add_option("--input", args->input, "Source symbols, e.g. \"5 9 3 17 4\" (3..31)")->required();
  cmd->add_option("--beam", args->beam, "Beam width (1: greedy)")->capture_default_str();
  cmd->add_option("--out", args->out, "Output picture (.png or .svg)")->capture_default_str();
  add_threads_option(cmd);
  cmd->callback([args] {
    if (cmd_beam_invalid(args->beam)) throw UsageError("--beam must be >= 1, got " + std::to_string(args->beam));
    std::vector<int32_t> source;
    as_usage([&] { source = data::parse_symbols(args->input); });
    train::LoadedModel loaded = train::load_checkpoint(args->model);
    const std::string output = write_alignment(*loaded.model, source, args->beam, args->out);
    std::printf("input:  %s\noutput: %s\nheatmap: %s\n", data::symbols_to_string(source).c_str(), output.c_str(),
                args->out.c_str());
  });
}

ATTN_REGISTER_COMMAND(50, add_align_command);

}  // namespace attn::cli
