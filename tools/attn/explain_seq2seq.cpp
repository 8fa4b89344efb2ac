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
#include <nlohmann/json.hpp>

#include "attn/data/text.h"
#include "attn/explain/pictures.h"
#include "attn/explain/seq2seq_checkpoint.h"
#include "attn/explain/seq2seq_report.h"
#include "attn/io/atomic_file.h"
#include "attn/json.h"
#include "commands.h"
#include "common.h"

namespace attn::cli {
namespace {

using explain::ExplainableSeq2Seq;

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
void print_pair(const ExplainableSeq2Seq& l, const explain::ExplainedPair& p, bool json) {
  const explain::Seq2SeqReport one = explain::summarise_seq2seq({p});
  if (json) {
    const nlohmann::json report =
        explain::seq2seq_report_json(one, {{"kind", l.kind}, {"attention", l.model.attention}});
    std::printf("%s\n", json_text(report.at("pairs").at(0)).c_str());
    return;
  }
  const explain::PairImportance& m = p.importance;
  std::printf("source: %s\noutput: %s\n", joined(p.source_tokens).c_str(), joined(p.target_tokens).c_str());
  std::printf(
      "  attention: %s; gradient x input of log p(y_t) over the source embeddings (full gradient); "
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
  std::printf(
      "  alignment agreement (same argmax source position): attention-gradient %.0f %%, attention-LOO %.0f %%, "
      "gradient-LOO %.0f %% of %zu target tokens\n",
      100.0 * one.agreement[0].share(), 100.0 * one.agreement[1].share(), 100.0 * one.agreement[2].share(),
      m.hypothesis.size());
}

void run_report(const ExplainableSeq2Seq& l, const Seq2SeqExplainArgs& a) {
  std::string split;
  const std::vector<std::string> lines = explain::report_sources(l, a.data, a.split, a.limit, a.seed, &split);
  const auto start = std::chrono::steady_clock::now();
  explain::ExplainedSources explained =
      with_progress("explain", [&](const auto& progress) { return explain::explain_sources(l, lines, progress); });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nlohmann::json context = {
      {"model", a.model}, {"kind", l.kind},   {"config", l.config}, {"attention", l.model.attention},
      {"split", split},   {"limit", a.limit}, {"seconds", seconds}};
  if (l.translator) context["data"] = a.data;
  if (l.synthetic) context["seed"] = a.seed;
  const explain::Seq2SeqReport report = explain::summarise_seq2seq(std::move(explained.pairs), explained.skipped_empty);
  const nlohmann::json j = explain::seq2seq_report_json(report, context);
  const std::string md = explain::seq2seq_report_markdown(report, context);
  write_report(
      a.out, j, md, [&](const std::string& dir) { explain::write_seq2seq_report_pictures(report, dir); }, "pairs",
      a.json);
  std::fprintf(stderr, "explained %zu sources (%lld target tokens) in %.0f s: %s/report.json, %s/report.md\n",
               report.pairs.size(), static_cast<long long>(report.target_tokens), seconds, a.out.c_str(),
               a.out.c_str());
}

}  // namespace

void write_report(const std::string& out, const nlohmann::json& j, const std::string& md,
                  const std::function<void(const std::string&)>& write_pictures, const char* items, bool json) {
  std::filesystem::create_directories(out);
  io::write_file_atomically((std::filesystem::path(out) / "report.json").string(), json_text(j, 1) + "\n");
  io::write_file_atomically((std::filesystem::path(out) / "report.md").string(), md);
  write_pictures(out);
  if (json) {
    nlohmann::json summary = j;
    summary.erase(items);
    std::printf("%s\n", json_text(summary).c_str());
  } else {
    std::printf("%s", md.c_str());
  }
}

void explain_seq2seq(const Seq2SeqExplainArgs& a) {
  const bool translation = a.kind == decode::CheckpointKind::translation;
  const std::string one_flag = translation ? "--text" : "--input";
  const bool one = translation ? a.text_given : a.input_given;
  if (translation && a.input_given)
    throw UsageError("--input is for synthetic-task seq2seq checkpoints; a translation model takes --text or --data");
  if (!translation && a.text_given)
    throw UsageError(
        "--text is for translation checkpoints; a synthetic-task model takes --input \"5 9 3\" or --limit N");
  if (!translation && !a.data.empty())
    throw UsageError(
        "--data is for translation checkpoints; a synthetic-task model explains --limit N generated sources");
  if (one && (!a.data.empty() || a.limit_given || !a.out.empty() || a.split_given))
    throw UsageError(one_flag + " explains one source: --data, --limit, --split and --out apply to a report");
  if (!one) {
    if (translation && a.data.empty()) throw UsageError("give --text \"...\" or --data D (with --out DIR)");
    if (!translation && !a.limit_given)
      throw UsageError("give --input \"5 9 3\" or --limit N generated sources (with --out DIR)");
    if (a.out.empty()) throw UsageError("a report needs --out DIR (for report.json and report.md)");
    if (!a.picture.empty()) throw UsageError("--picture applies to " + one_flag + " (a report draws into --out)");
  }
  const ExplainableSeq2Seq l = explain::load_explainable_seq2seq(a.model, a.kind);
  refuse_outputs_naming_inputs({{"--picture", a.picture}});
  if (!one) {
    run_report(l, a);
    return;
  }
  const std::string text = translation ? data::valid_utf8(a.text) : a.input;
  std::vector<int32_t> ids;
  as_usage([&] { ids = l.source_ids(text); });
  if (ids.empty()) throw UsageError(one_flag + " has no tokens: there is nothing to explain");
  const explain::ExplainedPair p = l.explain(text, ids);
  print_pair(l, p, a.json);
  if (!a.picture.empty()) explain::write_pair_picture(p, a.picture);
}

}  // namespace attn::cli
