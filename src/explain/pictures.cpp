#include "attn/explain/pictures.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attn/viz/plot.h"

namespace attn::explain {
namespace {

// One Kendall-τ histogram series: the share of the defined τ per bin of 0.1 over [-1, 1], at
// the bins' centres. t.defined must be > 0.
viz::Series tau_histogram(const TauSummary& t) {
  viz::Series series{t.pair.first + "-" + t.pair.second, {}, {}};
  std::vector<double> counts(20, 0.0);
  for (const auto& k : t.per_sentence)
    if (k.defined)
      counts[static_cast<size_t>(std::clamp(static_cast<int>(std::floor((k.tau + 1.0) / 0.1)), 0, 19))] += 1;
  for (int b = 0; b < 20; ++b) {
    series.x.push_back(-0.95 + 0.1 * b);
    series.y.push_back(counts[static_cast<size_t>(b)] / static_cast<double>(t.defined));
  }
  return series;
}

// plot as DIR/name.png and DIR/name.svg.
void write_both(const viz::LinePlot& plot, const std::string& dir, const std::string& name) {
  for (const char* extension : {".png", ".svg"})
    viz::write_line_plot(plot, (std::filesystem::path(dir) / (name + extension)).string());
}

// The mean of value(sentence) per bin of 0.1 of the sentence's maximum attention weight, over
// the sentences where it is defined (an empty bin: a gap).
viz::Series binned_by_max_attention(const ExplainReport& r, const std::string& name,
                                    const std::function<std::optional<double>(const SentenceImportance&)>& value) {
  std::vector<double> sums(10, 0.0), counts(10, 0.0);
  for (const auto& s : r.sentences) {
    const std::optional<double> v = value(s.importance);
    if (!v) continue;
    const float top = *std::max_element(s.importance.attention.begin(), s.importance.attention.end());
    const size_t bin = static_cast<size_t>(std::clamp(static_cast<int>(std::floor(top / 0.1f)), 0, 9));
    sums[bin] += *v;
    counts[bin] += 1;
  }
  viz::Series series{name, {}, {}};
  for (size_t b = 0; b < 10; ++b) {
    series.x.push_back(0.05 + 0.1 * static_cast<double>(b));
    series.y.push_back(counts[b] > 0 ? sums[b] / counts[b] : std::nan(""));
  }
  return series;
}

// `plot` (its x label set here) with one series, value(sentence) against the sentence's
// maximum attention weight (binned_by_max_attention), as DIR/name.png and .svg.
void write_binned_plot(const ExplainReport& r, const std::string& dir, const std::string& name, viz::LinePlot plot,
                       const std::string& series,
                       const std::function<std::optional<double>(const SentenceImportance&)>& value) {
  plot.x_label = "maximum attention weight (bin centre)";
  plot.series.push_back(binned_by_max_attention(r, series, value));
  write_both(plot, dir, name);
}

// The τ histograms per target token (share of target tokens per τ bin of 0.1).
void write_tau_picture(const Seq2SeqReport& r, const std::string& dir) {
  viz::LinePlot tau{
      "Kendall tau per target token", "tau (bin centre; bins of 0.1)", "share of target tokens", {}, 0.0, {}};
  for (const auto& t : r.taus) {
    if (t.defined == 0) continue;
    tau.series.push_back(tau_histogram(t));
  }
  if (tau.series.empty()) return;
  write_both(tau, dir, "tau");
}

}  // namespace

// One sentence's measures as a heatmap (PNG, SVG or PDF by the extension): one row per measure
// (attention, |gradient x input|, LOO, |IG|, and rollout and flow for transformer-cls), each
// divided by its row's maximum so the darkest cell is the token that measure ranks first.
void write_sentence_picture(const ExplainedSentence& s, const std::string& path) {
  const SentenceImportance& m = s.importance;
  viz::Heatmap map;
  map.title = "Token importance, each row scaled to its maximum: " + s.text;
  map.col_labels = s.tokens;
  std::vector<float> panel;
  for (const char* measure : {"attention", "gradient", "loo", "ig", "rollout", "flow"}) {
    const std::vector<float> row = ranking(m, measure);
    if (row.empty()) continue;  // LOO of one token; rollout and flow of bilstm-attn
    const float top = *std::max_element(row.begin(), row.end());
    for (float v : row) panel.push_back(top > 0.0f ? v / top : 0.0f);
    const std::string name = measure;
    map.row_labels.push_back(name == "gradient" ? "|grad x input|" : name == "ig" ? "|IG|" : name);
  }
  map.panels = {panel};
  viz::write_heatmap(map, path);
}

// The report's pictures: the τ histograms (as frequency polygons: the share of sentences in
// each τ bin of width 0.1), the erasure curves (the share of sentences whose decision has
// flipped with at most a fraction f of their tokens removed), and for bilstm-attn the
// permutation medians and the adversarial JSDs against the maximum attention weight (the mean
// per bin of 0.1).
void write_report_pictures(const ExplainReport& r, const std::string& dir) {
  viz::LinePlot tau{"Kendall tau per sentence", "tau (bin centre; bins of 0.1)", "share of sentences", {}, 0.0, {}};
  for (const auto& t : r.taus) {
    const std::string name = t.pair.first + "-" + t.pair.second;
    if (t.defined == 0 || name == "attention-ig" || name == "ig-loo" || name == "gradient-ig" ||
        name == "attention-rollout" || name == "attention-flow" || name == "rollout-gradient" ||
        name == "flow-gradient")
      continue;
    tau.series.push_back(tau_histogram(t));
  }
  if (!tau.series.empty()) write_both(tau, dir, "tau");

  if (r.erasure.defined > 0) {
    viz::LinePlot erasure{"Erasure until the decision flips (Serrano & Smith)",
                          "fraction of tokens removed, at most",
                          "share of sentences flipped",
                          {},
                          0.0,
                          1.0};
    const std::vector<std::pair<std::string, const ErasureOrder SentenceErasure::*>> orders = {
        {"attention order", &SentenceErasure::attention},
        {"|gradient x input| order", &SentenceErasure::gradient},
        {"random order", &SentenceErasure::random}};
    for (const auto& [name, member] : orders) {
      viz::Series series{name, {}, {}};
      for (int step = 0; step <= 20; ++step) {
        const double f = 0.05 * step;
        double flipped = 0.0;
        for (const auto& s : r.sentences)
          if (s.erasure.defined && (s.erasure.*member).flipped() && (s.erasure.*member).fraction <= f + 1e-12)
            flipped += 1;
        series.x.push_back(f);
        series.y.push_back(flipped / static_cast<double>(r.erasure.defined));
      }
      erasure.series.push_back(series);
    }
    write_both(erasure, dir, "erasure");
  }

  if (r.with_permutations > 0)
    write_binned_plot(
        r, dir, "permutation",
        {"Permuting the attention (Jain & Wallace)", "", "mean of the per-sentence median |dy|", {}, 0.0, {}},
        "median |dy| over the permutations", [](const auto& m) {
          return m.has_permutations() ? std::optional<double>(m.permutation_median) : std::nullopt;
        });
  if (r.with_adversarial > 0)
    write_binned_plot(r, dir, "adversarial",
                      {"Adversarial attention (Jain & Wallace)",
                       "",
                       "mean of the per-sentence max JSD (nats), |dy| <= 0.05",
                       {},
                       0.0,
                       std::log(2.0)},
                      "max JSD from the attention", [](const auto& m) {
                        return m.has_adversarial && m.attention.size() >= 2 ? std::optional<double>(m.adversarial.jsd)
                                                                            : std::nullopt;
                      });
}

// One source's three maps as heatmap panels (rows: target tokens, columns: source tokens),
// each row of |gradient| and LOO divided by its maximum so the darkest cell is the source
// token that measure ranks first (the attention rows already sum to 1).
void write_pair_picture(const ExplainedPair& p, const std::string& path) {
  viz::Heatmap map;
  map.title = "attention vs importance, rows scaled to their maximum: " + p.text;
  map.col_labels = p.source_tokens;
  map.row_labels = p.target_tokens;
  for (const char* measure : {"attention", "gradient", "loo"}) {
    if (std::string(measure) == "loo" && !p.importance.has_leave_one_out()) continue;
    std::vector<float> panel;
    for (size_t t = 0; t < p.importance.hypothesis.size(); ++t) {
      const std::vector<float> row = target_ranking(p.importance, t, measure);
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

void write_seq2seq_report_pictures(const Seq2SeqReport& r, const std::string& dir) {
  write_tau_picture(r, dir);
  if (!r.pairs.empty())
    for (const char* extension : {".png", ".svg"})
      write_pair_picture(r.pairs.front(), (std::filesystem::path(dir) / (std::string("pair") + extension)).string());
}

}  // namespace attn::explain
