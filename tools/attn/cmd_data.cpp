// attn data: the data sets attn's commands read, fetched with checksums (docs/data.md).
//   attn data get sst2 [multi30k ...] [--to DIR] [--mirror DIR|URL]
//   attn data list [--to DIR]
//   attn data speech --data DIR --out DIR [--sentences N] [--snr DB] [--seed S]
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "attn/data/catalog.h"
#include "attn/data/speech_build.h"
#include "attn/error.h"
#include "attn/train/progress.h"
#include "commands.h"
#include "common.h"

namespace attn::cli {
namespace {
namespace fs = std::filesystem;

// The data sets known, or those in `folder` with whether each verifies.
void print_list(const std::string& folder) {
  std::printf("%-24s %-9s %s\n", "name", "status", "where / what");
  for (const data::CatalogEntry& e : data::catalog()) {
    const fs::path path = fs::path(folder) / e.name;
    if (!fs::is_directory(path)) {
      std::printf("%-24s %-9s %s\n", e.name, "-", e.title);
      continue;
    }
    const data::VerifyResult v = data::verify_data_set(e, path.string());
    std::printf("%-24s %-9s %s\n", e.name, v.verifies ? "verifies" : "BAD", path.string().c_str());
    if (!v.verifies) std::printf("%-24s %-9s %s\n", "", "", v.problem.c_str());
  }
}

// One progress bar per file, in KiB, drawn with the training bars' class.
struct FileBars {
  std::unique_ptr<train::Progress> bar;
  std::string file;
  void operator()(const std::string& name, int64_t done, int64_t total) {
    if (name.empty()) {
      if (bar) bar->finish();
      bar.reset();
      file.clear();
      return;
    }
    if (!bar || name != file) {
      if (total <= 0) return;  // size not known yet
      bar = std::make_unique<train::Progress>(name + " KiB", std::max<int64_t>(1, total / 1024));
      file = name;
    }
    bar->update(done / 1024, {});
  }
};

// ATTN_TEST_ARCHIVE_SHA256="NAME=SHA256[,NAME=SHA256]": the tests' pins for the archives they
// serve from a mirror (data/catalog.h, GetOptions::test_archive_sha256; docs/data.md).
std::map<std::string, std::string> test_archive_pins() {
  std::map<std::string, std::string> pins;
  const char* env = std::getenv("ATTN_TEST_ARCHIVE_SHA256");
  if (env == nullptr || *env == '\0') return pins;
  std::stringstream in(env);
  for (std::string item; std::getline(in, item, ',');) {
    const size_t eq = item.find('=');
    const std::string sha = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (eq == 0 || sha.size() != 64 || sha.find_first_not_of("0123456789abcdef") != std::string::npos)
      throw UsageError("ATTN_TEST_ARCHIVE_SHA256: expected NAME=SHA256 (64 lower-case hex digits), got '" + item + "'");
    pins[item.substr(0, eq)] = sha;
  }
  return pins;
}

void add_speech_command(CLI::App& data);

void add_data_command(CLI::App& app) {
  struct Args {
    std::vector<std::string> names;
    std::string to, mirror;
    bool list = false;
    int stall_seconds = 30;
  };
  auto args = std::make_shared<Args>();
  CLI::App* data =
      app.add_subcommand("data", "Fetch the data sets (SST-2, Multi30k, ...) with pinned checksums; list them");
  data->require_subcommand(1);
  const std::string to_help =
      "The data folder (default $XDG_DATA_HOME/attn, or ~/.local/share/attn: " + data::data_home() +
      "), where commands look when --data is not given";
  CLI::App* get =
      data->add_subcommand("get", "Download data sets into the data folder, checking each file's pinned SHA-256");
  get->add_option("names", args->names, "Data sets: " + data::catalog_names());
  get->add_option("--to", args->to, to_help);
  get->add_option(
      "--mirror", args->mirror,
      "A folder or http(s) URL laid out like ../shared/data (NAME/FILE) to fetch from instead of the "
      "upstream sources, or for tatoeba-fra-eng and cmudict holding the upstream's archive "
      "(NAME/fra-eng.zip, NAME/cmu-pronouncing-dictionary-3.0.0.tgz); the checksums are checked all the same");
  get->add_option("--stall-timeout", args->stall_seconds,
                  "Give up on a server that sends nothing for this many seconds")
      ->capture_default_str();
  get->add_flag("--list", args->list, "List the known data sets and what is installed (as attn data list)");
  get->callback([args] {
    if (args->list) {
      print_list(args->to.empty() ? data::data_home() : args->to);
      return;
    }
    if (args->names.empty())
      throw UsageError("attn data get needs a data set name (known: " + data::catalog_names() + ")");
    if (args->stall_seconds < 1)
      throw UsageError("--stall-timeout must be >= 1 s, got " + std::to_string(args->stall_seconds));
    as_usage([&] {
      for (const std::string& name : args->names) data::catalog_entry(name);
    });
    FileBars bars;
    data::GetOptions o;
    o.to = args->to;
    o.mirror = args->mirror;
    o.test_archive_sha256 = test_archive_pins();
    for (const auto& [name, sha] : o.test_archive_sha256)
      std::fprintf(stderr,
                   "attn data get: ATTN_TEST_ARCHIVE_SHA256: a mirror's archive of %s is checked against the "
                   "test's SHA-256 %.12s..., its unpacked files against attn's pins\n",
                   name.c_str(), sha.c_str());
    o.stall_seconds = args->stall_seconds;
    o.stop = &install_interrupt_flag();
    o.say = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
    o.progress_of = [&bars](const std::string& name, int64_t done, int64_t total) { bars(name, done, total); };
    for (const std::string& name : args->names) {
      const std::string where = data::get_data_set(name, o);
      std::printf("%s: installed in %s (every file's sha256 checked)\n", name.c_str(), where.c_str());
    }
  });
  add_speech_command(*data);
  CLI::App* list =
      data->add_subcommand("list", "The known data sets, which are installed where, and whether they verify");
  list->add_option("--to", args->to, to_help);
  list->callback([args] {
    const std::string home = args->to.empty() ? data::data_home() : args->to;
    std::printf("data folder: %s\n", home.c_str());
    print_list(home);
    if (args->to.empty() && fs::is_directory("../shared/data")) {
      std::printf("\n../shared/data (used when the data folder lacks a set):\n");
      print_list("../shared/data");
    }
  });
}

// attn data speech: the library builds the set (data/speech_build.h); this parses and prints.
void add_speech_command(CLI::App& data) {
  struct Args {
    std::string data = "../shared/data", out;
    int64_t sentences = 3000;
    double snr = 0.0;
    uint64_t seed = 1;
  };
  auto args = std::make_shared<Args>();
  CLI::App* speech = data.add_subcommand(
      "speech",
      "Speak Tatoeba's English sentences with espeak-ng in 12 voices and cache their 80-bin log-mel "
      "features: OUT/{train,dev,test}.speech and OUT/manifest.json (docs/data.md, \"Spoken sentences\")");
  speech->add_option("--data", args->data, "The tatoeba-fra-eng folder (holding fra.txt.gz), or the folder holding it")
      ->capture_default_str();
  speech->add_option("--out", args->out, "The folder to make (it must not exist, or be empty)")->required();
  speech->add_option("--sentences", args->sentences, "How many sentences, the shortest first")->capture_default_str();
  CLI::Option* snr =
      speech->add_option("--snr", args->snr, "Add white noise at this signal-to-noise ratio in dB (default: none)");
  speech->add_option("--seed", args->seed, "Seeds the split, voice, rate, pitch and noise draws")
      ->capture_default_str();
  speech->callback([args, snr] {
    if (args->sentences < 1) throw UsageError("--sentences must be >= 1, got " + std::to_string(args->sentences));
    data::SpeechBuildOptions o;
    o.data_dir = fs::exists(fs::path(args->data) / "tatoeba-fra-eng" / "fra.txt.gz")
                     ? (fs::path(args->data) / "tatoeba-fra-eng").string()
                     : args->data;
    o.out_dir = args->out;
    o.sentences = args->sentences;
    if (snr->count() > 0) o.snr_db = args->snr;
    o.seed = args->seed;
    std::unique_ptr<train::Progress> bar;
    o.progress = [&bar](int64_t done, int64_t total) {
      if (!bar) bar = std::make_unique<train::Progress>("speaking", total);
      if (done == total || done % std::max<int64_t>(1, total / 50) == 0) bar->update(done, {});  // 50 lines at most
    };
    data::SpeechBuildReport r;
    try {
      r = data::build_speech_set(o);
    } catch (const ValueError& e) {
      throw ValueError(std::string("attn data speech: ") + e.what());
    } catch (const IoError& e) {
      throw IoError(std::string("attn data speech: ") + e.what());
    }
    if (bar) bar->finish();
    std::printf("%s: %s, %lld sentences in %.1f s\n", args->out.c_str(), r.espeak_version.c_str(),
                static_cast<long long>(args->sentences), r.seconds);
    for (const data::SpeechSplitReport& s : r.splits)
      std::printf("  %-5s %6lld utterances %9lld frames %12lld bytes\n", s.name.c_str(),
                  static_cast<long long>(s.utterances), static_cast<long long>(s.frames),
                  static_cast<long long>(s.bytes));
    std::printf("  dropped: %lld with digits, %lld with other characters, %lld repeats (of %lld read)\n",
                static_cast<long long>(r.dropped_digits), static_cast<long long>(r.dropped_other),
                static_cast<long long>(r.dropped_repeats), static_cast<long long>(r.sentences_read));
  });
}

}  // namespace

ATTN_REGISTER_COMMAND(75, add_data_command);

}  // namespace attn::cli
