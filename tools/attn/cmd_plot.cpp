// attn plot buckets: BLEU against source length for several `attn eval --json` results (their
// "length_buckets"), one line per file, each bucket's sentence count under its x label.
//   attn eval --model none/model.safetensors --data ../shared/data --json > none.json   # and bahdanau.json, ...
//   attn plot buckets none.json bahdanau.json luong.json --labels none,bahdanau,luong --out buckets.png
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attn/error.h"
#include "attn/io/input_file.h"
#include "attn/json.h"
#include "attn/viz/plot.h"
#include "commands.h"
#include "common.h"

namespace attn::cli {
namespace {

struct PlotBucketsArgs {
  std::vector<std::string> results;
  std::string labels, out, title = "BLEU by source length";
};

// One eval result's buckets, in order: label ("1-5"), sentences, BLEU (NaN for an empty bucket).
struct BucketCurve {
  std::vector<std::string> words;
  std::vector<int64_t> sentences;
  std::vector<double> bleu;
};

constexpr size_t kMaxResultBytes = size_t{64} << 20;  // an eval --json result is a few kB

BucketCurve read_bucket_curve(const std::string& path) {
  const nlohmann::json j = parse_json(io::read_regular_file(path, kMaxResultBytes), path);
  const auto bad = [&](const std::string& what) {
    return ValueError(path + ": " + what + " (write it with attn eval --json of a translation checkpoint)");
  };
  if (!j.is_object() || !j.contains("length_buckets")) throw bad("no \"length_buckets\"");
  const nlohmann::json& buckets = j["length_buckets"];
  if (!buckets.is_array() || buckets.empty()) throw bad("\"length_buckets\" is not a non-empty list");
  BucketCurve curve;
  for (size_t k = 0; k < buckets.size(); ++k) {
    const nlohmann::json& b = buckets[k];
    const std::string where = fmt::format("bucket {}", k);
    if (!b.is_object() || !b.contains("words") || !b["words"].is_string() || !b.contains("sentences") ||
        !b["sentences"].is_number_integer() || b["sentences"].get<int64_t>() < 0 || !b.contains("bleu"))
      throw bad(where + " lacks \"words\", a count \"sentences\" >= 0 or \"bleu\"");
    const int64_t n = b["sentences"].get<int64_t>();
    const nlohmann::json& bleu = b["bleu"];
    if (n == 0 ? !bleu.is_null() : !(bleu.is_number() && std::isfinite(bleu.get<double>()) && bleu.get<double>() >= 0))
      throw bad(where + (n == 0 ? " has no sentences but a BLEU" : " has no BLEU (a number >= 0)"));
    curve.words.push_back(b["words"].get<std::string>());
    curve.sentences.push_back(n);
    curve.bleu.push_back(n == 0 ? NAN : bleu.get<double>());
  }
  return curve;
}

// "1-5\nn=120" when every file has the same count, else "1-5\nn=120/118" (in file order).
std::string tick_label(const std::vector<BucketCurve>& curves, size_t k) {
  bool same = true;
  for (const BucketCurve& c : curves) same = same && c.sentences[k] == curves[0].sentences[k];
  std::string counts;
  for (size_t i = 0; i < (same ? 1 : curves.size()); ++i)
    counts += (i ? "/" : "") + std::to_string(curves[i].sentences[k]);
  return curves[0].words[k] + "\nn=" + counts;
}

void run_plot_buckets(const PlotBucketsArgs& a) {
  std::vector<std::string> labels = split_list(a.labels);
  if (a.labels.empty()) {
    for (const std::string& path : a.results) labels.push_back(std::filesystem::path(path).stem().string());
  } else if (labels.size() != a.results.size()) {
    throw UsageError(fmt::format("--labels has {} names for {} result files", labels.size(), a.results.size()));
  }
  std::vector<BucketCurve> curves;
  for (const std::string& path : a.results) {
    curves.push_back(read_bucket_curve(path));
    if (curves.back().words != curves.front().words)
      throw ValueError(fmt::format("{}: its length buckets differ from those of {}", path, a.results.front()));
  }
  refuse_outputs_naming_inputs({{"--out", a.out}});
  viz::LinePlot plot;
  plot.title = a.title;
  plot.x_label = "source length in words (n: sentences of the bucket)";
  plot.y_label = "BLEU";
  plot.y_min = 0.0;
  for (size_t k = 0; k < curves[0].words.size(); ++k)
    plot.x_ticks.push_back({static_cast<double>(k), tick_label(curves, k)});
  for (size_t i = 0; i < curves.size(); ++i) {
    viz::Series s{labels[i], {}, curves[i].bleu};
    for (size_t k = 0; k < s.y.size(); ++k) s.x.push_back(static_cast<double>(k));
    plot.series.push_back(std::move(s));
  }
  viz::write_line_plot(plot, a.out);
  std::printf("plot: %s\n", a.out.c_str());
}

}  // namespace

void add_plot_command(CLI::App& app) {
  CLI::App* plot = app.add_subcommand("plot", "Draw results of other commands as pictures (PNG, SVG, PDF)");
  plot->require_subcommand(1);
  auto args = std::make_shared<PlotBucketsArgs>();
  CLI::App* buckets = plot->add_subcommand(
      "buckets", "BLEU against source length for `attn eval --json` results, one line each, with the sentence counts");
  buckets->add_option("results", args->results, "attn eval --json outputs (translation checkpoints)")->required();
  buckets->add_option("--labels", args->labels, "Comma-separated legend names, one per file (default: the file names)");
  buckets->add_option("--title", args->title, "The plot's title")->capture_default_str();
  buckets->add_option("--out", args->out, "The picture to write: .png, .svg or .pdf")->required();
  buckets->callback([args] { run_plot_buckets(*args); });
}

ATTN_REGISTER_COMMAND(82, add_plot_command);

}  // namespace attn::cli
