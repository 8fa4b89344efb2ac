// attn view: one self-contained HTML page (viewer/ inlined, no network) that shows a model's
// attention for one input, or a run folder's training curves:
//   attn view --model M (--input "5 9 3" | --text "..." | --stdin) --out view.html
//   attn view --model ASR --speech FILE --utterance ID [--join N] --out view.html
//   attn view --run DIR --out view.html
// Every checkpoint kind with attention but G2P: the RNN seq2seq (greedy and each beam
// hypothesis, one panel per head), the Transformer translation model (encoder self, decoder
// self and cross-attention, every layer and head, per hypothesis), the character LM, the
// classifiers (transformer-cls: every layer; bilstm-attn: its attention beside gradient ×
// input, leave-one-out and integrated gradients with Kendall τ) and ASR (one utterance's
// alignment over the listener frames above its log-mel spectrogram). docs/viewer.md shows them.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attn/data/tasks.h"
#include "attn/data/text.h"
#include "attn/decode/checkpoint_kind.h"
#include "attn/explain/attention_view.h"
#include "attn/io/atomic_file.h"
#include "attn/io/input_file.h"
#include "attn/json.h"
#include "attn/printable.h"
#include "attn/train/run_log.h"
#include "attn/viz/html_view.h"
#include "commands.h"
#include "common.h"

namespace attn::cli {
namespace {
using nlohmann::json;
namespace fs = std::filesystem;

struct ViewArgs {
  std::string model, input, text, run, out, json_out;
  bool from_stdin = false;
  int beam = 4;
  SpeechOptions speech;  // ASR: the .speech file, the utterance's id, --join
};

// --run DIR: every log.jsonl record; for a sweep folder (results.json, as attn sweep and
// train --compare write it) the accuracy-by-length results too. Each file is read as
// attn reads every input: a regular file (a FIFO, a link to /dev/zero or a folder in its
// place is refused), bounded in size, its JSON in depth (attn/json.h); a damaged last line
// of a log is skipped with a warning (train::read_run_log).
json run_json(const std::string& dir) {
  if (!fs::is_directory(dir)) throw IoError(dir + ": not a folder (--run wants a run or sweep folder)");
  json j = {{"kind", "run"}, {"title", "run " + fs::path(dir).filename().string()}, {"runs", json::array()}};
  auto read_log = [&](const fs::path& log, const std::string& name) {
    train::RunLogRecords read = train::read_run_log(log.string());
    for (const std::string& warning : read.warnings)
      std::fprintf(stderr, "attn: warning: %s\n", printable(warning).c_str());
    j["runs"].push_back({{"name", name}, {"records", std::move(read.records)}});
  };
  // (exists: a dangling link is no file; a FIFO or a folder named log.jsonl is one, refused.)
  auto present = [](const fs::path& path) {
    std::error_code error;
    return fs::exists(path, error);
  };
  if (present(fs::path(dir) / "log.jsonl")) read_log(fs::path(dir) / "log.jsonl", fs::path(dir).filename().string());
  std::vector<fs::path> children;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_directory() && present(entry.path() / "log.jsonl")) children.push_back(entry.path());
  std::sort(children.begin(), children.end());
  for (const fs::path& child : children) read_log(child / "log.jsonl", child.filename().string());
  const fs::path results = fs::path(dir) / "results.json";
  if (present(results))
    j["sweep"] = parse_json(io::read_regular_file(results.string(), kMaxJsonBytes), results.string());
  if (j["runs"].empty() && !j.contains("sweep"))
    throw IoError(dir + ": no log.jsonl and no results.json (not a run or sweep folder)");
  return j;
}

// A sweep folder's models (each child folder's model.safetensors of an RNN seq2seq with
// attention): the greedy alignment of one example each, a "hypothesis" named after the
// folder, so that the page's output menu switches between the models.
constexpr const char* kSweepExample = "5 9 3 17 4 8 11 6";
void add_sweep_alignments(json& page, json& raw, const ViewArgs& a) {
  std::vector<fs::path> models;
  for (const auto& entry : fs::directory_iterator(a.run))
    if (entry.is_directory() && fs::exists(entry.path() / "model.safetensors"))
      models.push_back(entry.path() / "model.safetensors");
  std::sort(models.begin(), models.end());
  std::vector<int32_t> source;
  as_usage([&] { source = data::parse_symbols(a.input.empty() ? kSweepExample : a.input); });
  if (source.empty()) throw UsageError("--input is empty");
  const explain::AttentionView v =
      explain::sweep_alignments(std::vector<std::string>(models.begin(), models.end()), source);
  if (v.hypotheses.empty()) return;
  const json packed = explain::view_json(v, true), numbers = explain::view_json(v, false);
  for (const char* key : {"input", "notes"}) page[key] = raw[key] = packed[key];
  page["hypotheses"] = packed["hypotheses"];
  raw["hypotheses"] = numbers["hypotheses"];
}

// The page shows one input: more than this is not one (`--stdin < /dev/zero` read until
// memory ran out).
constexpr size_t kMaxStdinBytes = size_t{1} << 20;

std::string read_stdin() {
  std::string text = read_stdin_bounded(kMaxStdinBytes);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

void run_view(ViewArgs& a, const CLI::App* cmd) {
  if (a.beam < 1) throw UsageError("--beam must be >= 1, got " + std::to_string(a.beam));
  json page, raw;
  if (!a.run.empty()) {
    page = raw = run_json(a.run);
    if (page.contains("sweep")) add_sweep_alignments(page, raw, a);
  } else {
    const decode::CheckpointKind kind = decode::checkpoint_kind(a.model);
    a.speech.check(cmd, kind, a.model);
    if (a.from_stdin) (kind == decode::CheckpointKind::seq2seq ? a.input : a.text) = read_stdin();
    explain::AttentionView v;
    const explain::ViewInput input{a.input,         data::valid_utf8(a.text), a.beam,
                                   a.speech.speech, a.speech.utterance,       a.speech.join};
    as_usage([&] { v = explain::attention_view(a.model, kind, input); });
    page = explain::view_json(v, true);
    if (!a.json_out.empty()) raw = explain::view_json(v, false);
  }
  // Every input is read by now: an output naming one (`--out M`, `--json M`) is refused
  // before anything is written.
  refuse_outputs_naming_inputs({{"--out", a.out}, {"--json", a.json_out}});
  viz::write_view_html(page, a.out);
  if (!a.json_out.empty()) io::write_file_atomically(a.json_out, json_text(raw, 1) + "\n");
  std::printf("view: %s\n", a.out.c_str());
}

}  // namespace

void add_view_command(CLI::App& app) {
  auto args = std::make_shared<ViewArgs>();
  CLI::App* cmd = app.add_subcommand("view", "Write an interactive attention viewer: one self-contained HTML page");
  auto* model = cmd->add_option("--model", args->model, "Checkpoint (model.safetensors) of any kind with attention");
  auto* run = cmd->add_option("--run", args->run, "A run folder (log.jsonl) or sweep folder: training curves");
  model->excludes(run);
  auto* input = cmd->add_option(
      "--input", args->input, "Synthetic-task model (or a sweep folder's models): source symbols, e.g. \"5 9 3 17 4\"");
  auto* text = cmd->add_option("--text", args->text, "Translation, language or classifier model: the text");
  auto* from_stdin = cmd->add_flag("--stdin", args->from_stdin, "Read the input (or text) from standard input");
  input->excludes(text)->excludes(from_stdin);
  text->excludes(from_stdin);
  for (auto* o : {text, from_stdin}) o->excludes(run);  // --input with --run: a sweep's example
  cmd->add_option("--beam", args->beam, "Beam width: the page shows greedy and each beam hypothesis (1: greedy only)")
      ->capture_default_str();
  for (auto* o : args->speech.add(cmd)) o->excludes(run);
  cmd->add_option("--out", args->out, "The HTML page to write")->required();
  cmd->add_option("--json", args->json_out, "Also write the raw data (every weight as a number) to this JSON file");
  add_threads_option(cmd);
  cmd->callback([args, cmd] {
    if (args->model.empty() && args->run.empty()) throw UsageError("give --model CHECKPOINT or --run DIR");
    run_view(*args, cmd);
  });
}

ATTN_REGISTER_COMMAND(55, add_view_command);

}  // namespace attn::cli
