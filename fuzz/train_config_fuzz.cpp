// libFuzzer target: `attn train --config FILE`, the TOML run configuration reader. The bytes
// are a config file, read by the train command exactly as the CLI builds it (cmd_train.cpp's
// options and callback, train_option_groups.cpp's apply_config_file, main's value checks from
// option_parsing.cpp) with --print-config, so nothing trains. Accepted answers to bad input:
// a CLI11 parse error, a usage error or an attn::Error, as main turns each into one line.
//
// The round-trip promise (issue 34, defect 7): a file that is accepted prints a config.toml;
// that config.toml must be accepted in turn and print the same options again (comment lines,
// which name the command line, aside). Otherwise `attn train --config RUN/config.toml` would
// train another run than the one recorded.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "attn/error.h"
#include "commands.h"
#include "fuzz_support.h"
#include "option_parsing.h"

namespace {

// What `attn train --config path --print-config` prints, or false when it refuses the file.
bool print_config(const std::string& path, std::string& printed) {
  CLI::App app{"attn"};
  app.require_subcommand(1);
  attn::cli::add_registered_commands(app);  // only `train` is linked in
  attn::cli::add_option_value_checks(app);
  static const std::string out = attn::fuzz::scratch_path("printed.toml");
  std::fflush(stdout);
  const int saved = dup(1);
  const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (saved < 0 || fd < 0 || dup2(fd, 1) < 0) std::abort();  // a target that cannot capture tests nothing
  close(fd);
  bool accepted = true;
  try {
    const char* argv[] = {"attn", "train", "--config", path.c_str(), "--print-config"};
    app.parse(5, const_cast<char**>(argv));
  } catch (const CLI::ParseError&) {
    accepted = false;
  } catch (const attn::cli::UsageError&) {
    accepted = false;
  } catch (const attn::Error&) {
    accepted = false;
  }
  std::fflush(stdout);
  dup2(saved, 1);
  close(saved);
  std::ifstream in(out, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  printed = text.str();
  return accepted;
}

// The option lines of a printed config.toml (its comments name the command line).
std::string option_lines(const std::string& printed) {
  std::istringstream in(printed);
  std::string kept;
  for (std::string line; std::getline(in, line);)
    if (!line.starts_with("#")) kept += line + "\n";
  return kept;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string file = attn::fuzz::scratch_path("config.toml");
  attn::fuzz::write_file(file, data, size);
  std::string printed;
  if (!print_config(file, printed)) return 0;
  const std::string again_file = attn::fuzz::scratch_path("again.toml");
  attn::fuzz::write_file(again_file, reinterpret_cast<const uint8_t*>(printed.data()), printed.size());
  std::string again;
  if (!print_config(again_file, again)) {
    std::fprintf(stderr, "broken promise: the config.toml printed for an accepted file is refused:\n%s",
                 printed.c_str());
    std::abort();
  }
  if (option_lines(again) != option_lines(printed)) {
    std::fprintf(stderr, "broken promise: the config.toml read back prints other options:\n%s---\n%s",
                 option_lines(printed).c_str(), option_lines(again).c_str());
    std::abort();
  }
  return 0;
}
