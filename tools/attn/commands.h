#pragma once
// Each subcommand lives in its own file and adds itself to the app here.
#include <stdexcept>

#include <CLI/CLI.hpp>

namespace attn::cli {

// A usage error found after parsing (impossible option values): exit code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Ctrl-C stopped the work after saving: exit code 130.
struct Interrupted : std::exception {};

inline bool cmd_beam_invalid(int beam) { return beam < 1; }

void add_train_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_sweep_command(CLI::App& app);
void add_align_command(CLI::App& app);
void add_demo_command(CLI::App& app);
void add_bench_command(CLI::App& app);

}  // namespace attn::cli
