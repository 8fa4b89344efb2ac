// The attn command-line tool. Exit codes: 0 success, 1 runtime failure, 2 usage error.
#include <cstdio>

#include "attn/error.h"
#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"attn: attention mechanisms in sequence models — train, evaluate and look inside"};
  app.set_version_flag("--version", "attn 0.1.0");
  app.require_subcommand(1);
  attn::cli::add_registered_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  } catch (const attn::cli::Interrupted&) {
    return 130;
  } catch (const attn::cli::UsageError& e) {
    std::fprintf(stderr, "attn: usage error: %s\n", e.what());
    return 2;
  } catch (const attn::Error& e) {
    std::fprintf(stderr, "attn: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attn: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
