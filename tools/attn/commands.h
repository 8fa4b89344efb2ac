#pragma once
// Each subcommand lives in its own file and adds itself to the app here.
#include <CLI/CLI.hpp>

namespace attn::cli {

// A usage error found after parsing (impossible option values): exit code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void add_demo_command(CLI::App& app);

}  // namespace attn::cli
