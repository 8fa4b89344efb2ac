// The attn command-line tool. Exit codes: 0 success, 1 runtime failure, 2 usage error.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <string>

#include "attn/cpu.h"
#include "attn/distributed/communicator.h"
#include "attn/error.h"
#include "attn/io/input_file.h"
#include "attn/parallel.h"
#include "attn/printable.h"
#include "attn/signals.h"
#include "attn/thread_limits.h"
#include "attn/version.h"
#include "commands.h"
#include "option_parsing.h"

namespace {

// "train, eval, ..." — the registered commands, for an unknown-command message.
std::string command_names(CLI::App& app) {
  std::string names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    names += (names.empty() ? "" : ", ") + sub->get_name();
  return names;
}

bool is_command(CLI::App& app, const std::string& name) {
  return !app.get_subcommands([&](const CLI::App* sub) { return sub->get_name() == name; }).empty();
}

// One line for a command-line parse error: CLI11's message, where to read more, no second line.
int usage_error(CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  const bool unknown_command =
      argc > 1 && argv[1][0] != '-' && app.get_subcommands().empty() && !is_command(app, argv[1]);
  if (unknown_command)
    std::fprintf(stderr, "attn: usage error: unknown command '%s' (commands: %s; see attn --help)\n",
                 attn::printable(argv[1]).c_str(), command_names(app).c_str());
  else
    std::fprintf(stderr, "attn: usage error: %s (see attn%s%s --help)\n", attn::printable(e.what()).c_str(),
                 app.get_subcommands().empty() ? "" : " ",
                 app.get_subcommands().empty() ? "" : app.get_subcommands().front()->get_name().c_str());
  return 2;
}

// Every error line is formed here, from the exception's message: nlohmann::json's prefix
// "[json.exception.type_error.302] " dropped (the message already names the file and the
// field), and whatever the message quotes from outside (a file name, a metadata string, a
// line of input) made printable: a newline or an ESC in it would split the line or reach
// the terminal as an escape sequence (attn::printable).
std::string error_line(std::string message) {
  for (size_t at = message.find("[json.exception."); at != std::string::npos;
       at = message.find("[json.exception.", at)) {
    const size_t end = message.find("] ", at);
    if (end == std::string::npos) break;
    message.erase(at, end + 2 - at);
  }
  return attn::printable(message);
}

int run_command_line(int argc, char** argv);

}  // namespace

// Under mpirun, a rank that fails stops the others (distributed::finish: MPI_Abort).
int main(int argc, char** argv) { return attn::distributed::finish(run_command_line(argc, argv)); }

namespace {

int run_command_line(int argc, char** argv) {
  // A thread count that would be ignored is a usage error, not a silent "all cores".
  if (const char* env = std::getenv("ATTN_NUM_THREADS")) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (*env == '\0' || *end != '\0' || n < 1) {
      std::fprintf(stderr, "attn: usage error: ATTN_NUM_THREADS must be a positive integer, got '%s'\n",
                   attn::printable(env).c_str());
      return 2;
    }
    if (n > attn::max_threads()) {
      std::fprintf(stderr,
                   "attn: usage error: ATTN_NUM_THREADS %ld: more than %d threads per CPU (this machine has %d CPUs)\n",
                   n, attn::kMaxThreadsPerCpu, attn::machine_cpus());
      return 2;
    }
  }
  CLI::App app{"attn: attention mechanisms in sequence models — train, evaluate and look inside"};
  app.set_version_flag("--version", std::string("attn ") + attn::version() + " (commit " + attn::build_commit() + ")");
  app.require_subcommand(1);
  attn::cli::add_registered_commands(app);
  // No command writes over a file it reads (`view --model M --out M`, `eval --hypotheses
  // RUN/spm.model`): io::AtomicFile refuses it. (attn train turns this off: resuming rewrites
  // the last.safetensors it read.)
  attn::io::refuse_outputs_over_inputs();
  attn::cli::add_option_value_checks(app);
  // Once the options are read (--threads), before the command's work: the threads' address
  // space under a ulimit -v (attn/parallel.h), a clear error instead of a hang in OpenBLAS.
  // And the kernels' ISA level (ATTN_ISA): a bad value is one error line before any work.
  app.parse_complete_callback([] {
    attn::prepare_blas_threads();
    attn::kernel_isa_level();
  });
  int status = 0;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    status = app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    status = app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    status = app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(app, e, argc, argv);
  } catch (const attn::cli::Interrupted& e) {
    return e.exit_code;
  } catch (const attn::cli::UsageError& e) {
    std::fprintf(stderr, "attn: usage error: %s\n", error_line(e.what()).c_str());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "attn: error: out of memory: a size in the options or in the model file is too large for "
                 "this machine\n");
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    // libstdc++ says "filesystem error: cannot create directories: Not a directory [a/b]".
    std::string message = e.what();
    if (message.rfind("filesystem error: ", 0) == 0) message.erase(0, 18);
    std::fprintf(stderr, "attn: error: %s\n", error_line(message).c_str());
    return 1;
  } catch (const attn::InterruptedError& e) {
    std::fprintf(stderr, "attn: %s\n", e.what());
    return 128 + e.signal();
  } catch (const attn::Error& e) {
    std::fprintf(stderr, "attn: error: %s\n", error_line(e.what()).c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attn: error: %s\n", error_line(e.what()).c_str());
    return 1;
  }
  // Output that could not be written (a full disk, a closed pipe) is a failure, not a success.
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "attn: error: cannot write the standard output: %s\n", std::strerror(errno ? errno : EIO));
    return 1;
  }
  return status;
}

}  // namespace
