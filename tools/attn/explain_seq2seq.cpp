// attn explain for seq2seq and translation checkpoints (see explain_seq2seq.h): per target
// token of the greedy hypothesis, the attention row beside gradient × input and leave-one-out
// over the source tokens; report.json, report.md and pictures for many sources, the terminal
// view (and --picture) for one.
#include "explain_seq2seq.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>

#include <nlohmann/json.hpp>

#include "attn/json.h"
#include "attn/data/parallel.h"
#include "attn/data/tasks.h"
#include "attn/data/text.h"
#include "attn/decode/translate.h"
#include "attn/explain/seq2seq_report.h"
#include "attn/io/atomic_file.h"
#include "attn/train/checkpoint.h"
#include "attn/train/progress.h"
#include "attn/decode/seq2seq.h"
#include "attn/viz/plot.h"
#include "commands.h"
#include "common.h"
#include "explain_pictures.h"

namespace attn::cli {
namespace {

// A loaded encoder-decoder with what explain needs around it.
struct Loaded {
  std::optional<decode::LoadedSeq2Seq> synthetic;         // attn-seq2seq
  std::optional<decode::LoadedTranslator> translator;  // attn-translation
  explain::SourceEmbeddingSeq2Seq model;
  std::string kind;  // "seq2seq <task>", "translation rnn", "translation transformer"
  nlohmann::json config;
  size_t max_source = 128;
  int max_output = 0;  // 0: no limit beyond 2·S + 10 (the Transformer: its positions)

  std::vector<std::string> tokens(const std::vector<int32_t>& ids) const {
    if (translator) return translator->tokenizer->pieces(ids);
    std::vector<std::string> out;
    for (int32_t id : ids) out.push_back(data::symbol_name(id));
    return out;
  }
};

Loaded load(const Seq2SeqExplainArgs& a) {
  Loaded l;
  if (a.kind == decode::CheckpointKind::seq2seq) {
    l.synthetic = decode::load_seq2seq(a.model);
    l.model = explain::source_embedding_model(*l.synthetic->model);
    l.kind = "seq2seq " + l.synthetic->info.task;
    l.config = l.synthetic->model->config().to_json();
    l.max_source = static_cast<size_t>(l.synthetic->model->config().max_src_len);
    return l;
  }
  l.translator = decode::load_translator(a.model);
  l.kind = std::string("translation ") + models::to_string(l.translator->info.kind);
  l.config = l.translator->info.config;
  nn::Module& module = l.translator->model->module();
  if (auto* rnn = dynamic_cast<models::Seq2Seq*>(&module)) {
    l.model = explain::source_embedding_model(*rnn);
    l.max_source = static_cast<size_t>(rnn->config().max_src_len);
  } else if (auto* transformer = dynamic_cast<models::TransformerSeq2Seq*>(&module)) {
    l.model = explain::source_embedding_model(*transformer);
    l.max_source = static_cast<size_t>(transformer->config().max_len);
    l.max_output = static_cast<int>(transformer->config().max_len) - 1;
  } else {
    throw ValueError(a.model + ": a translation model of kind '" + models::to_string(l.translator->info.kind) +
                     "'; attn explain supports the rnn and transformer translators");
  }
  return l;
}

// The source ids of one line or symbol string, cut to what the model takes.
std::vector<int32_t> source_ids(const Loaded& l, const std::string& text) {
  std::vector<int32_t> ids;
  if (l.translator) {
    ids = l.translator->tokenizer->encode(text);
  } else {
    as_usage([&] { ids = data::parse_symbols(text); });
  }
  if (ids.size() > l.max_source) ids.resize(l.max_source);
  return ids;
}

explain::ExplainedPair explain_one(const Loaded& l, const std::string& text, const std::vector<int32_t>& ids) {
  int max_len = static_cast<int>(2 * ids.size() + 10);
  if (l.max_output > 0) max_len = std::min(max_len, l.max_output);
  explain::ExplainedPair p;
  p.text = text;
  p.importance = explain::explain_pair(l.model, ids, max_len);
  p.source_tokens = l.tokens(p.importance.source);
  p.target_tokens = l.tokens(p.importance.hypothesis);
  return p;
}

std::string joined(const std::vector<std::string>& tokens) {
  std::string s;
  for (const auto& t : tokens) s += (s.empty() ? "" : " ") + t;
  return s;
}

std::string tau_cell(const explain::KendallTau& k) {
  if (!k.defined) return "undefined (" + k.undefined_reason + ")";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.3f (p %.2g)", k.tau, k.p_value);
  return buffer;
}

// A token in a column of 9 characters: cut to 9 UTF-8 code points (never inside one; the
// pieces' "▁" is 3 bytes), right-aligned with spaces.
std::string column(const std::string& token) {
  std::string cut;
  int points = 0;
  for (size_t i = 0; i < token.size(); ++i) {
    const bool starts = (static_cast<unsigned char>(token[i]) & 0xC0) != 0x80;
    if (starts && ++points > 9) break;
    cut += token[i];
  }
  return std::string(static_cast<size_t>(9 - std::min(points, 9)), ' ') + cut;
}

// One source in the terminal: per target token, the three rows over the source tokens.
void print_pair(const Loaded& l, const explain::ExplainedPair& p, bool json) {
  const explain::Seq2SeqReport one = explain::summarise_seq2seq({p});
  if (json) {
    const nlohmann::json report = explain::seq2seq_report_json(one, {{"kind", l.kind}, {"attention", l.model.attention}});
    std::printf("%s\n", json_text(report.at("pairs").at(0)).c_str());
    return;
  }
  const explain::PairImportance& m = p.importance;
  std::printf("source: %s\noutput: %s\n", joined(p.source_tokens).c_str(), joined(p.target_tokens).c_str());
  std::printf("  attention: %s; gradient x input of log p(y_t) over the source embeddings (full gradient); "
              "leave-one-out |d log p(y_t)|\n",
              l.model.attention.c_str());
  for (size_t t = 0; t < m.hypothesis.size(); ++t) {
    std::printf("  y_%zu = %s  (log p %.3f)\n    %-10s", t + 1, p.target_tokens[t].c_str(), m.log_prob[t], "");
    for (const auto& s : p.source_tokens) std::printf(" %s", column(s).c_str());
    std::printf("\n");
    const auto row = [&](const char* name, const std::vector<float>& v) {
      std::printf("    %-10s", name);
      for (float x : v) std::printf(" %9.4f", x);
      std::printf("\n");
    };
    row("attention", m.attention[t]);
    row("grad x in", m.gradient[t]);
    if (m.has_leave_one_out()) row("LOO", m.leave_one_out[t]);
    std::printf("    tau attention-gradient %s, attention-LOO %s, gradient-LOO %s\n",
                tau_cell(one.taus[0].per_sentence[t]).c_str(), tau_cell(one.taus[1].per_sentence[t]).c_str(),
                tau_cell(one.taus[2].per_sentence[t]).c_str());
  }
  if (!m.has_leave_one_out()) std::printf("  (one source token: no leave-one-out; tau is undefined)\n");
  std::printf("  alignment agreement (same argmax source position): attention-gradient %.0f %%, attention-LOO %.0f %%, "
              "gradient-LOO %.0f %% of %zu target tokens\n",
              100.0 * one.agreement[0].share(), 100.0 * one.agreement[1].share(), 100.0 * one.agreement[2].share(),
              m.hypothesis.size());
}

// One source's three maps as heatmap panels (rows: target tokens, columns: source tokens),
// each row of |gradient| and LOO divided by its maximum so the darkest cell is the source
// token that measure ranks first (the attention rows already sum to 1).
void write_pair_picture(const explain::ExplainedPair& p, const std::string& path) {
  viz::Heatmap map;
  map.title = "attention vs importance, rows scaled to their maximum: " + p.text;
  map.col_labels = p.source_tokens;
  map.row_labels = p.target_tokens;
  for (const char* measure : {"attention", "gradient", "loo"}) {
    if (std::string(measure) == "loo" && !p.importance.has_leave_one_out()) continue;
    std::vector<float> panel;
    for (size_t t = 0; t < p.importance.hypothesis.size(); ++t) {
      const std::vector<float> row = explain::target_ranking(p.importance, t, measure);
      const float top = *std::max_element(row.begin(), row.end());
      const bool scale = std::string(measure) != "attention";
      for (float v : row) panel.push_back(scale ? (top > 0.0f ? v / top : 0.0f) : std::clamp(v, 0.0f, 1.0f));
    }
    map.panels.push_back(std::move(panel));
    map.panel_titles.push_back(std::string(measure) == "gradient" ? "|grad x input| (row max 1)"
                               : std::string(measure) == "loo"    ? "leave-one-out (row max 1)"
                                                                  : "attention");
  }
  viz::write_heatmap(map, path);
}

// The τ histograms per target token (share of target tokens per τ bin of 0.1).
void write_tau_picture(const explain::Seq2SeqReport& r, const std::string& dir) {
  viz::LinePlot tau{"Kendall tau per target token", "tau (bin centre; bins of 0.1)", "share of target tokens", {}, 0.0, {}};
  for (const auto& t : r.taus) {
    if (t.defined == 0) continue;
    tau.series.push_back(tau_histogram(t));
  }
  if (tau.series.empty()) return;
  for (const char* extension : {".png", ".svg"})
    viz::write_line_plot(tau, (std::filesystem::path(dir) / (std::string("tau") + extension)).string());
}

// The sources of a report: a translation split's source lines, or generated task sources.
std::vector<std::string> report_sources(const Loaded& l, const Seq2SeqExplainArgs& a, std::string& split) {
  std::vector<std::string> lines;
  if (l.translator) {
    split = a.split == "dev" ? "val" : a.split == "test" ? "test2016" : a.split;
    std::string dir = a.data;  // the multi30k folder, or the folder holding it (as attn eval)
    if (std::filesystem::exists(dir + "/multi30k/raw")) dir += "/multi30k";
    const data::ParallelCorpus corpus = data::load_parallel(dir, split, l.translator->info.src_lang,
                                                            l.translator->info.tgt_lang, a.limit);
    return corpus.src;
  }
  const auto& info = l.synthetic->info;
  data::TaskGenerator generator(data::parse_task(info.task), std::max(1, info.min_len),
                                std::max(std::max(1, info.min_len), info.max_len), a.seed);
  split = "generated";
  for (const auto& s : generator.random_sources(static_cast<int>(a.limit))) lines.push_back(data::symbols_to_string(s));
  return lines;
}

void run_report(const Loaded& l, const Seq2SeqExplainArgs& a) {
  std::string split;
  const std::vector<std::string> lines = report_sources(l, a, split);
  const auto start = std::chrono::steady_clock::now();
  std::vector<explain::ExplainedPair> pairs;
  int64_t skipped = 0;
  {
    train::Progress progress("explain", static_cast<int64_t>(lines.size()));
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::vector<int32_t> ids = source_ids(l, lines[i]);
      if (ids.empty()) {
        ++skipped;
      } else {
        pairs.push_back(explain_one(l, lines[i], ids));
      }
      progress.update(static_cast<int64_t>(i + 1), {});
    }
    progress.finish();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nlohmann::json context = {{"model", a.model}, {"kind", l.kind},   {"config", l.config},    {"attention", l.model.attention},
                            {"split", split},   {"limit", a.limit}, {"seconds", seconds}};
  if (l.translator) context["data"] = a.data;
  if (l.synthetic) context["seed"] = a.seed;
  const explain::Seq2SeqReport report = explain::summarise_seq2seq(std::move(pairs), skipped);
  const nlohmann::json j = explain::seq2seq_report_json(report, context);
  const std::string md = explain::seq2seq_report_markdown(report, context);
  std::filesystem::create_directories(a.out);
  io::write_file_atomically((std::filesystem::path(a.out) / "report.json").string(), json_text(j, 1) + "\n");
  io::write_file_atomically((std::filesystem::path(a.out) / "report.md").string(), md);
  write_tau_picture(report, a.out);
  if (!report.pairs.empty())
    for (const char* extension : {".png", ".svg"})
      write_pair_picture(report.pairs.front(), (std::filesystem::path(a.out) / (std::string("pair") + extension)).string());
  if (a.json) {
    nlohmann::json summary = j;
    summary.erase("pairs");
    std::printf("%s\n", json_text(summary).c_str());
  } else {
    std::printf("%s", md.c_str());
  }
  std::fprintf(stderr, "explained %zu sources (%lld target tokens) in %.0f s: %s/report.json, %s/report.md\n",
               report.pairs.size(), static_cast<long long>(report.target_tokens), seconds, a.out.c_str(), a.out.c_str());
}

}  // namespace


void explain_seq2seq(const Seq2SeqExplainArgs& a) {
  const bool translation = a.kind == decode::CheckpointKind::translation;
  const std::string one_flag = translation ? "--text" : "--input";
  const bool one = translation ? a.text_given : a.input_given;
  if (translation && a.input_given)
    throw UsageError("--input is for synthetic-task seq2seq checkpoints; a translation model takes --text or --data");
  if (!translation && a.text_given)
    throw UsageError("--text is for translation checkpoints; a synthetic-task model takes --input \"5 9 3\" or --limit N");
  if (!translation && !a.data.empty())
    throw UsageError("--data is for translation checkpoints; a synthetic-task model explains --limit N generated sources");
  if (one && (!a.data.empty() || a.limit_given || !a.out.empty() || a.split_given))
    throw UsageError(one_flag + " explains one source: --data, --limit, --split and --out apply to a report");
  if (!one) {
    if (translation && a.data.empty()) throw UsageError("give --text \"...\" or --data D (with --out DIR)");
    if (!translation && !a.limit_given) throw UsageError("give --input \"5 9 3\" or --limit N generated sources (with --out DIR)");
    if (a.out.empty()) throw UsageError("a report needs --out DIR (for report.json and report.md)");
    if (!a.picture.empty()) throw UsageError("--picture applies to " + one_flag + " (a report draws into --out)");
  }
  const Loaded l = load(a);
  refuse_outputs_naming_inputs({{"--picture", a.picture}});
  if (!one) {
    run_report(l, a);
    return;
  }
  const std::string text = translation ? data::valid_utf8(a.text) : a.input;
  const std::vector<int32_t> ids = source_ids(l, text);
  if (ids.empty()) throw UsageError(one_flag + " has no tokens: there is nothing to explain");
  const explain::ExplainedPair p = explain_one(l, text, ids);
  print_pair(l, p, a.json);
  if (!a.picture.empty()) write_pair_picture(p, a.picture);
}

}  // namespace attn::cli
