// The seq2seq explain summary, JSON and Markdown (see attn/explain/seq2seq_report.h).
#include "attn/explain/seq2seq_report.h"

#include <cmath>
#include <cstdio>

#include "attn/explain/zero_share.h"
#include "tau_verdict.h"

namespace attn::explain {
using detail::format;
using nlohmann::json;

namespace {

std::string pair_name(const TauPair& p) { return p.first + "-" + p.second; }

const TauSummary& find_tau(const Seq2SeqReport& r, const std::string& name) {
  for (const auto& t : r.taus)
    if (pair_name(t.pair) == name) return t;
  throw ValueError("explain: no τ for " + name);
}

const AgreementSummary& find_agreement(const Seq2SeqReport& r, const std::string& name) {
  for (const auto& a : r.agreement)
    if (pair_name(a.pair) == name) return a;
  throw ValueError("explain: no agreement for " + name);
}

std::string cell(const TauSummary& t) {
  if (t.defined == 0) return "undefined";
  return format("%.2f ± %.2f, %.0f %% sig.", t.mean, t.sd, 100.0 * t.share_significant);
}

}  // namespace

std::vector<float> target_ranking(const PairImportance& p, size_t t, const std::string& measure) {
  if (measure == "attention") return p.attention.at(t);
  if (measure == "loo") return p.has_leave_one_out() ? p.leave_one_out.at(t) : std::vector<float>{};
  if (measure == "gradient") {
    std::vector<float> row = p.gradient.at(t);
    for (float& v : row) v = std::fabs(v);
    return row;
  }
  throw ValueError("explain: unknown measure '" + measure + "' (valid: attention, gradient, loo)");
}

const std::vector<TauPair>& seq2seq_tau_pairs() {
  static const std::vector<TauPair> pairs = {{"attention", "gradient"}, {"attention", "loo"}, {"gradient", "loo"}};
  return pairs;
}

size_t argmax_position(const std::vector<float>& row) {
  size_t best = 0;
  for (size_t i = 1; i < row.size(); ++i)
    if (row[i] > row[best]) best = i;
  return best;
}

Seq2SeqReport summarise_seq2seq(std::vector<ExplainedPair> pairs, int64_t skipped_empty) {
  Seq2SeqReport r;
  r.pairs = std::move(pairs);
  r.skipped_empty = skipped_empty;
  double log_prob = 0.0;
  ZeroShare zeros;
  for (const auto& p : r.pairs) {
    r.target_tokens += static_cast<int64_t>(p.importance.hypothesis.size());
    r.one_token_sources += p.importance.source.size() < 2;
    for (float v : p.importance.log_prob) log_prob += v;
    for (const std::vector<float>& row : p.importance.attention) zeros.add(row);
  }
  r.attention_zero_share = zeros.share();
  if (r.target_tokens > 0) r.mean_target_log_prob = log_prob / static_cast<double>(r.target_tokens);
  for (const TauPair& pair : seq2seq_tau_pairs()) {
    TauSummary t;
    t.pair = pair;
    AgreementSummary a;
    a.pair = pair;
    for (const auto& p : r.pairs)
      for (size_t i = 0; i < p.importance.hypothesis.size(); ++i) {
        const std::vector<float> x = target_ranking(p.importance, i, pair.first);
        const std::vector<float> y = target_ranking(p.importance, i, pair.second);
        if (x.empty() || y.empty()) {
          KendallTau k;
          k.undefined_reason = "fewer than 2 tokens";
          t.per_sentence.push_back(k);
          continue;
        }
        t.per_sentence.push_back(kendall_tau_b(x, y));
        ++a.tokens;
        a.agreed += argmax_position(x) == argmax_position(y);
      }
    fill_moments(t);
    r.taus.push_back(std::move(t));
    r.agreement.push_back(a);
  }
  return r;
}

json seq2seq_report_json(const Seq2SeqReport& r, const json& context) {
  json taus = json::object(), agreement = json::object();
  for (const auto& t : r.taus)
    taus[pair_name(t.pair)] = {
        {"mean", t.mean}, {"sd", t.sd}, {"share_significant", t.share_significant}, {"defined", t.defined}};
  for (const auto& a : r.agreement)
    agreement[pair_name(a.pair)] = {{"share", a.share()}, {"agreed", a.agreed}, {"target_tokens", a.tokens}};
  json pairs = json::array();
  size_t token = 0;  // index into each TauSummary::per_sentence
  for (const auto& p : r.pairs) {
    const PairImportance& m = p.importance;
    json targets = json::array();
    for (size_t i = 0; i < m.hypothesis.size(); ++i, ++token) {
      json tau = json::object();
      for (const auto& t : r.taus) {
        const KendallTau& k = t.per_sentence.at(token);
        tau[pair_name(t.pair)] =
            k.defined ? json{{"tau", k.tau}, {"p", k.p_value}} : json{{"undefined", k.undefined_reason}};
      }
      targets.push_back({{"token", p.target_tokens.at(i)},
                         {"id", m.hypothesis[i]},
                         {"log_prob", m.log_prob.at(i)},
                         {"attention", m.attention.at(i)},
                         {"gradient", m.gradient.at(i)},
                         {"loo", m.has_leave_one_out() ? json(m.leave_one_out.at(i)) : json(nullptr)},
                         {"tau", tau}});
    }
    pairs.push_back(
        {{"source", p.text}, {"source_tokens", p.source_tokens}, {"source_ids", m.source}, {"targets", targets}});
  }
  return {{"run", context},
          {"sources_explained", r.pairs.size()},
          {"target_tokens", r.target_tokens},
          {"one_token_sources", r.one_token_sources},
          {"skipped_empty", r.skipped_empty},
          {"mean_target_log_prob", r.mean_target_log_prob},
          {"attention_zero_share", r.attention_zero_share},
          {"measures",
           {{"attention", context.value("attention", std::string())},
            {"gradient",
             "sum_d d log p(y_t)/d e_{s,d} * e_{s,d}, full gradient (attention not held constant), "
             "teacher-forced on the greedy hypothesis; tau ranks |gradient|"},
            {"loo", "|log p(y_t) - log p(y_t | source without token s)|, hypothesis held fixed"}}},
          {"tau", taus},
          {"alignment_agreement", agreement},
          {"pairs", pairs}};
}

std::string seq2seq_report_markdown(const Seq2SeqReport& r, const json& context) {
  const TauSummary &ag = find_tau(r, "attention-gradient"), &al = find_tau(r, "attention-loo"),
                   &gl = find_tau(r, "gradient-loo");
  const AgreementSummary &aag = find_agreement(r, "attention-gradient"), &aal = find_agreement(r, "attention-loo"),
                         &agl = find_agreement(r, "gradient-loo");
  std::string md = "# Is the attention an explanation? (seq2seq)\n\n";
  md += "Model `" + context.value("model", std::string("?")) + "` (" + context.value("kind", std::string("?")) + ")";
  if (context.contains("split")) md += ", " + context.at("split").get<std::string>() + " split";
  md += ": " + std::to_string(r.pairs.size()) + " sources explained, " + std::to_string(r.target_tokens) +
        " target tokens of their greedy hypotheses" +
        format(" (mean log p of the emitted token %.3f); ", r.mean_target_log_prob) +
        std::to_string(r.one_token_sources) + " one-token sources (no LOO, τ undefined, left out); " +
        std::to_string(r.skipped_empty) + " empty sources skipped" +
        format("; %.1f %% of the attention weights are exactly 0.\n\n", 100.0 * r.attention_zero_share);
  md += "Per target token y_t, the source tokens are ranked by the attention row (" +
        context.value("attention", std::string("?")) +
        "), by |gradient × input| of log p(y_t) over the source embeddings (the full gradient, teacher-forced on the "
        "hypothesis) and by leave-one-out |Δ log p(y_t)| (the source token removed, the hypothesis held fixed).\n\n";
  md += "| | attention–gradient | attention–LOO | gradient–LOO |\n|---|---|---|---|\n";
  md += "| Kendall τ-b per target token (mean ± sd, share p < 0.05) | " + cell(ag) + " | " + cell(al) + " | " +
        cell(gl) + " |\n";
  md += "| alignment agreement (same argmax source position) | " +
        format("%.1f %% of %.0f", 100.0 * aag.share(), static_cast<double>(aag.tokens)) + " | " +
        format("%.1f %% of %.0f", 100.0 * aal.share(), static_cast<double>(aal.tokens)) + " | " +
        format("%.1f %% of %.0f", 100.0 * agl.share(), static_cast<double>(agl.tokens)) + " |\n\n";
  md += "report.json holds, per source and per target token, the attention, gradient and LOO vectors and each τ.\n\n";
  md += "## Verdict\n\n";
  if (gl.defined == 0) {
    md += "No source had two or more tokens: nothing to rank.\n";
    return md;
  }
  const double best_agreement = std::max(aag.share(), aal.share());
  md += detail::tau_verdict(ag, al, gl,
                            "The two importance measures agree with each other (gradient–LOO τ %.2f) clearly more "
                            "than the attention agrees with either (%.2f with the gradient, %.2f with LOO)",
                            "The attention ranks the source tokens about as the importance measures do "
                            "(attention–gradient τ %.2f, attention–LOO τ %.2f, gradient–LOO τ %.2f)",
                            "The attention and the importance measures agree only moderately (attention–gradient "
                            "τ %.2f, attention–LOO τ %.2f, gradient–LOO τ %.2f)");
  md += format(
      "; the most-attended source token is the most important one for %.0f %% of the target tokens by the "
      "gradient and %.0f %% by LOO. ",
      100.0 * aag.share(), 100.0 * aal.share());
  md += best_agreement >= 0.7 ? "As an alignment (which source token a target token comes from) the attention is a "
                                "fair guide for this model; as a full ranking of the source, check it against LOO.\n"
                              : "Read the attention map as a hint about alignment, not as an explanation of the "
                                "output.\n";
  return md;
}

}  // namespace attn::explain
