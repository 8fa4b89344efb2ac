#pragma once
// Each subcommand lives in its own file and registers itself with ATTN_REGISTER_COMMAND:
//   ATTN_REGISTER_COMMAND(30, add_eval_command);
// main() adds the registered commands in ascending order (the order of `attn --help`), so a
// new command touches no other file.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <stdexcept>
#include <vector>

namespace attn::cli {

// A usage error found after parsing (impossible option values): exit code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A signal stopped the work after saving: exit code 128 + the signal (SIGINT 130, SIGTERM 143,
// SIGHUP 129), as a shell reports a process killed by it.
struct Interrupted : std::exception {
  int exit_code = 130;
};

inline bool cmd_beam_invalid(int beam) { return beam < 1; }

using AddCommandFn = void (*)(CLI::App&);
struct CommandRegistration {
  int order;
  AddCommandFn add;
};
inline std::vector<CommandRegistration>& command_registry() {
  static std::vector<CommandRegistration> registry;
  return registry;
}
struct RegisterCommand {
  RegisterCommand(int order, AddCommandFn add) { command_registry().push_back({order, add}); }
};
// Adds every registered command to `app`, in ascending order.
inline void add_registered_commands(CLI::App& app) {
  auto registry = command_registry();
  std::stable_sort(registry.begin(), registry.end(),
                   [](const CommandRegistration& a, const CommandRegistration& b) { return a.order < b.order; });
  for (const auto& r : registry) r.add(app);
}

}  // namespace attn::cli

#define ATTN_CLI_CONCAT_INNER(a, b) a##b
#define ATTN_CLI_CONCAT(a, b) ATTN_CLI_CONCAT_INNER(a, b)
#define ATTN_REGISTER_COMMAND(order, fn) \
  static ::attn::cli::RegisterCommand ATTN_CLI_CONCAT(attn_cli_command_, __LINE__)(order, fn)
