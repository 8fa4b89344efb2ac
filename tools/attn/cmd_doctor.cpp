// attn doctor: what this machine gives attn (CPU, vector ISA, GEMM library and kernels, a
// measured sgemm rate, threads, OpenMP wait policy, versions), and one warning line when the
// GEMM kernels are below what the CPU supports. Needs no data, no network, no write access.
//   attn doctor [--json | --summary] [--seconds 1] [--threads N]
#include <cstdio>
#include <memory>

#include "attn/json.h"
#include "attn/train/machine_report.h"
#include "commands.h"
#include "common.h"

namespace attn::cli {
namespace {

void add_doctor_command(CLI::App& app) {
  struct Args {
    bool json = false;
    bool summary = false;
    double seconds = 1.0;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("doctor", "What this machine gives attn: CPU, GEMM kernels, sgemm rate, versions");
  auto* json = cmd->add_flag("--json", args->json, "One line of JSON");
  cmd->add_flag("--summary", args->summary, "One line, as run folders and docs/performance.md record it")
      ->excludes(json);
  cmd->add_option("--seconds", args->seconds, "Seconds spent measuring the 2048^3 sgemm rate (0: skip)")
      ->check(CLI::Range(0.0, 60.0));
  add_threads_option(cmd);
  cmd->callback([args] {
    const train::MachineReport report = train::machine_report({.sgemm_seconds = args->seconds});
    if (args->json)
      std::printf("%s\n", json_text(report.to_json()).c_str());
    else if (args->summary)
      std::printf("%s\n", report.summary().c_str());
    else
      std::printf("%s", report.to_text().c_str());
  });
}

}  // namespace

ATTN_REGISTER_COMMAND(95, add_doctor_command);

}  // namespace attn::cli
