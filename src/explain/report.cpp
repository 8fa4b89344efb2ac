// Jain & Wallace's summary over sentences, as JSON and Markdown (see attn/explain/report.h).
#include "attn/explain/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "attn/error.h"
#include "attn/explain/zero_share.h"
#include "tau_verdict.h"

namespace attn::explain {
using detail::format;
using nlohmann::json;

const std::vector<TauPair>& tau_pairs() {
  static const std::vector<TauPair> pairs = {{"attention", "gradient"}, {"attention", "loo"}, {"gradient", "loo"},
                                             {"attention", "ig"},       {"ig", "loo"},        {"gradient", "ig"}};
  return pairs;
}

const std::vector<TauPair>& transformer_tau_pairs() {
  static const std::vector<TauPair> pairs = [] {
    std::vector<TauPair> p = tau_pairs();
    for (const TauPair& extra : std::vector<TauPair>{{"rollout", "gradient"},
                                                     {"rollout", "loo"},
                                                     {"flow", "gradient"},
                                                     {"flow", "loo"},
                                                     {"attention", "rollout"},
                                                     {"attention", "flow"}})
      p.push_back(extra);
    return p;
  }();
  return pairs;
}

const std::vector<TauPair>& tau_pairs_for(const SentenceImportance& s) {
  return s.rollout.empty() ? tau_pairs() : transformer_tau_pairs();
}

std::vector<float> ranking(const SentenceImportance& s, const std::string& measure) {
  auto magnitudes = [](std::vector<float> v) {
    for (float& x : v) x = std::fabs(x);
    return v;
  };
  if (measure == "attention") return s.attention;
  if (measure == "gradient") return magnitudes(s.gradient);
  if (measure == "loo") return s.leave_one_out;
  if (measure == "ig") return magnitudes(s.integrated_gradients);
  if (measure == "rollout") return s.rollout;
  if (measure == "flow") return s.flow;
  throw ValueError("explain: unknown measure '" + measure + "' (valid: attention, gradient, loo, ig, rollout, flow)");
}

KendallTau sentence_tau(const SentenceImportance& s, const TauPair& pair) {
  if (s.attention.size() < 2) return kendall_tau_b({}, {});  // "fewer than 2 tokens"
  return kendall_tau_b(ranking(s, pair.first), ranking(s, pair.second));
}

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size();
  return m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
}

float max_attention(const SentenceImportance& s) {
  return s.attention.empty() ? 0.0f : *std::max_element(s.attention.begin(), s.attention.end());
}

std::string pair_name(const TauPair& p) { return p.first + "-" + p.second; }

ErasureSummary summarise_erasure(const std::vector<ExplainedSentence>& sentences) {
  ErasureSummary e;
  struct Sums {
    double flipped = 0.0, fractions = 0.0;
  } attention, gradient, random;
  const auto add = [](Sums& sums, const ErasureOrder& o) {
    if (!o.flipped()) return;
    sums.flipped += 1.0;
    sums.fractions += o.fraction;
  };
  for (const auto& s : sentences) {
    const SentenceErasure& x = s.erasure;
    if (!x.defined) continue;
    ++e.defined;
    e.top_delta += x.top_delta;
    e.random_delta += x.random_delta;
    e.top_flip_share += x.top_flips;
    e.random_flip_share += x.random_flip_share;
    add(attention, x.attention);
    add(gradient, x.gradient);
    add(random, x.random);
  }
  if (e.defined == 0) return e;
  const double n = static_cast<double>(e.defined);
  e.top_delta /= n;
  e.random_delta /= n;
  e.top_flip_share /= n;
  e.random_flip_share /= n;
  const auto order = [n](const Sums& sums) {
    return ErasureOrderSummary{sums.flipped / n, sums.flipped > 0 ? sums.fractions / sums.flipped : 0.0};
  };
  e.attention = order(attention);
  e.gradient = order(gradient);
  e.random = order(random);
  return e;
}

json erasure_order_json(const ErasureOrder& o) {
  return {{"removed_to_flip", o.flipped() ? json(o.removed_to_flip) : json(nullptr)},
          {"fraction", o.flipped() ? json(o.fraction) : json(nullptr)}};
}

}  // namespace

// mean, population sd and the share with p < 0.05 over the defined τ of t.per_sentence.
void fill_moments(TauSummary& t) {
  double total = 0.0, significant = 0.0;
  t.defined = 0;
  for (const auto& k : t.per_sentence)
    if (k.defined) {
      ++t.defined;
      total += k.tau;
      significant += k.p_value < 0.05;
    }
  if (t.defined == 0) return;
  t.mean = total / static_cast<double>(t.defined);
  double squares = 0.0;
  for (const auto& k : t.per_sentence)
    if (k.defined) squares += (k.tau - t.mean) * (k.tau - t.mean);
  t.sd = std::sqrt(squares / static_cast<double>(t.defined));
  t.share_significant = significant / static_cast<double>(t.defined);
}

ExplainReport summarise(std::vector<ExplainedSentence> sentences, int64_t skipped_empty) {
  ExplainReport r;
  r.sentences = std::move(sentences);
  r.skipped_empty = skipped_empty;
  r.transformer = !r.sentences.empty() && !r.sentences.front().importance.rollout.empty();
  for (const auto& s : r.sentences)
    if (s.importance.rollout.empty() == r.transformer)
      throw ValueError("explain: a report's sentences are of one kind (all with rollout, or none)");
  for (const TauPair& pair : r.transformer ? transformer_tau_pairs() : tau_pairs()) {
    TauSummary t;
    t.pair = pair;
    for (const auto& s : r.sentences) t.per_sentence.push_back(sentence_tau(s.importance, pair));
    fill_moments(t);
    r.taus.push_back(std::move(t));
  }
  ZeroShare zeros;
  for (const auto& s : r.sentences) zeros.add(s.importance.attention);
  r.attention_zero_share = zeros.share();
  std::vector<double> medians, jsds;
  double right = 0.0;
  for (const auto& s : r.sentences) {
    r.one_token_sentences += s.importance.attention.size() == 1;
    if (s.importance.has_permutations()) {
      ++r.with_permutations;
      medians.push_back(s.importance.permutation_median);
      r.share_permutation_median_below_001 += s.importance.permutation_median < 0.01f;
    }
    if (s.importance.has_adversarial && s.importance.attention.size() >= 2) {
      jsds.push_back(s.importance.adversarial.jsd);
      r.share_adversarial_jsd_above_05 += s.importance.adversarial.jsd > 0.5f;
      r.adversarial_jsd_mean += s.importance.adversarial.jsd;
      r.adversarial_delta_mean += s.importance.adversarial.delta;
    }
    if (r.heads.empty()) {
      r.heads = s.importance.heads;
      r.heads_per_layer = s.importance.heads_per_layer;
    } else {
      if (s.importance.heads.size() != r.heads.size())
        throw ValueError("explain: the sentences' head statistics differ in size");
      for (size_t h = 0; h < r.heads.size(); ++h) r.heads[h] += s.importance.heads[h];
    }
    r.ig_completeness_mean += s.importance.ig_completeness_error;
    r.ig_completeness_max = std::max(r.ig_completeness_max, static_cast<double>(s.importance.ig_completeness_error));
    if (s.gold >= 0) {
      ++r.labelled;
      right += s.gold == s.importance.label;
    }
  }
  if (!r.sentences.empty()) {
    r.ig_completeness_mean /= static_cast<double>(r.sentences.size());
  }
  if (r.with_permutations > 0) r.share_permutation_median_below_001 /= static_cast<double>(r.with_permutations);
  r.permutation_median_of_medians = median(medians);
  r.with_adversarial = static_cast<int64_t>(jsds.size());
  if (r.with_adversarial > 0) {
    r.adversarial_jsd_mean /= static_cast<double>(r.with_adversarial);
    r.adversarial_delta_mean /= static_cast<double>(r.with_adversarial);
    r.share_adversarial_jsd_above_05 /= static_cast<double>(r.with_adversarial);
    r.adversarial_jsd_median = median(jsds);
  }
  r.erasure = summarise_erasure(r.sentences);
  if (r.labelled > 0) r.accuracy = right / static_cast<double>(r.labelled);
  return r;
}

namespace {

json erasure_json(const ErasureSummary& e) {
  if (e.defined == 0) return nullptr;
  const auto order = [](const ErasureOrderSummary& o) {
    return json{{"share_flipped", o.share_flipped}, {"mean_fraction_removed", o.mean_fraction}};
  };
  return {{"sentences", e.defined},
          {"top_attention_delta", e.top_delta},
          {"random_token_delta", e.random_delta},
          {"top_attention_flip_share", e.top_flip_share},
          {"random_token_flip_share", e.random_flip_share},
          {"attention_order", order(e.attention)},
          {"gradient_order", order(e.gradient)},
          {"random_order", order(e.random)}};
}

}  // namespace

json report_json(const ExplainReport& r, const json& context) {
  json taus = json::object();
  for (const auto& t : r.taus)
    taus[pair_name(t.pair)] = {
        {"mean", t.mean}, {"sd", t.sd}, {"share_significant", t.share_significant}, {"defined", t.defined}};
  json sentences = json::array();
  for (size_t i = 0; i < r.sentences.size(); ++i) {
    const auto& s = r.sentences[i];
    const auto& m = s.importance;
    json tau = json::object();
    for (const auto& t : r.taus) {
      const KendallTau& k = t.per_sentence[i];
      tau[pair_name(t.pair)] = k.defined ? json{{"tau", k.tau}, {"p", k.p_value}}
                                         : json{{"tau", nullptr}, {"p", nullptr}, {"undefined", k.undefined_reason}};
    }
    sentences.push_back({{"text", s.text},
                         {"tokens", s.tokens},
                         {"gold", s.gold >= 0 ? json(s.gold) : json(nullptr)},
                         {"label", m.label},
                         {"probability", m.probability},
                         {"attention", m.attention},
                         {"gradient", m.gradient},
                         {"leave_one_out", m.has_leave_one_out ? json(m.leave_one_out) : json(nullptr)},
                         {"integrated_gradients", m.integrated_gradients},
                         {"ig_completeness_error", m.ig_completeness_error},
                         {"ig_baseline_probability", m.baseline_probability},
                         {"max_attention", max_attention(m)},
                         {"permutation_median", m.has_permutations() ? json(m.permutation_median) : json(nullptr)},
                         {"permutation_deltas", m.permutation_deltas},
                         {"tau", tau}});
    const SentenceErasure& x = s.erasure;
    sentences.back()["erasure"] = x.defined ? json{{"top_delta", x.top_delta},
                                                   {"top_flips", x.top_flips},
                                                   {"random_delta", x.random_delta},
                                                   {"random_flip_share", x.random_flip_share},
                                                   {"attention_order", erasure_order_json(x.attention)},
                                                   {"gradient_order", erasure_order_json(x.gradient)},
                                                   {"random_order", erasure_order_json(x.random)}}
                                            : json(nullptr);
    if (m.has_adversarial)
      sentences.back()["adversarial"] = {{"jsd", m.adversarial.jsd},
                                         {"delta", m.adversarial.delta},
                                         {"attention", m.adversarial.attention},
                                         {"final_jsd", m.adversarial.final_jsd},
                                         {"final_delta", m.adversarial.final_delta}};
    if (r.transformer) {
      sentences.back()["rollout"] = m.rollout;
      sentences.back()["flow"] = m.flow;
    }
  }
  json heads = json::array();
  for (size_t k = 0; k < r.heads.size(); ++k) {
    const HeadStatistics& h = r.heads[k];
    const auto share = [](double sum, int64_t rows) {
      return rows > 0 ? json(sum / static_cast<double>(rows)) : json(nullptr);
    };
    heads.push_back({{"layer", static_cast<int64_t>(k) / r.heads_per_layer},
                     {"head", static_cast<int64_t>(k) % r.heads_per_layer},
                     {"entropy", share(h.entropy, h.rows)},
                     {"cls", share(h.cls, h.rows)},
                     {"previous", share(h.previous, h.previous_rows)},
                     {"next", share(h.next, h.next_rows)},
                     {"punctuation", share(h.punctuation, h.rows)},
                     {"query_rows", h.rows}});
  }
  return {
      {"run", context},
      {"sentences_explained", r.sentences.size()},
      {"one_token_sentences", r.one_token_sentences},
      {"skipped_empty", r.skipped_empty},
      {"accuracy", r.labelled > 0 ? json(r.accuracy) : json(nullptr)},
      {"labelled", r.labelled},
      {"tau", taus},
      {"permutation", r.with_permutations > 0 ? json{{"median_of_medians", r.permutation_median_of_medians},
                                                     {"share_median_below_0.01", r.share_permutation_median_below_001},
                                                     {"sentences", r.with_permutations}}
                                              : json(nullptr)},
      {"adversarial", r.with_adversarial > 0 ? json{{"jsd_mean", r.adversarial_jsd_mean},
                                                    {"jsd_median", r.adversarial_jsd_median},
                                                    {"share_jsd_above_0.5", r.share_adversarial_jsd_above_05},
                                                    {"delta_mean", r.adversarial_delta_mean},
                                                    {"sentences", r.with_adversarial}}
                                             : json(nullptr)},
      {"heads", heads},
      {"erasure", erasure_json(r.erasure)},
      {"ig_completeness_error", {{"mean", r.ig_completeness_mean}, {"max", r.ig_completeness_max}}},
      {"attention_zero_share", r.attention_zero_share},
      {"jain_wallace_sst_bilstm_tanh",
       {{"attention-gradient", {{"mean", 0.35}, {"sd", 0.21}, {"share_significant", 0.49}}},
        {"attention-loo", {{"mean", 0.29}, {"sd", 0.19}, {"share_significant", 0.36}}},
        {"gradient-loo", {{"mean", 0.66}, {"sd", 0.16}, {"share_significant", 0.91}}},
        {"accuracy", 0.808}}},
      {"sentences", sentences}};
}

namespace {

const TauSummary& find(const ExplainReport& r, const std::string& first, const std::string& second) {
  for (const auto& t : r.taus)
    if (t.pair.first == first && t.pair.second == second) return t;
  throw ValueError("explain: no τ between " + first + " and " + second);
}

std::string cell(const TauSummary& t) {
  if (t.defined == 0) return "n/a (no sentence of 2+ tokens)";
  return format("%.2f ± %.2f, %.0f %% sig.", t.mean, t.sd, 100.0 * t.share_significant);
}

// Serrano & Smith's two tables: the single erasure, and the orders of erasure.
std::string erasure_markdown(const ErasureSummary& e) {
  std::string md = "## Erasure (Serrano & Smith 2019)\n\n";
  md += format("Over %.0f sentences of 2+ tokens. Deleting one token:\n\n", static_cast<double>(e.defined));
  md += "| deleted | mean \\|Δŷ\\| | decision flips |\n|---|---|---|\n";
  md += format("| the top-attended token | %.4f | %.1f %% |\n", e.top_delta, 100.0 * e.top_flip_share);
  md += format("| a random token (expectation) | %.4f | %.1f %% |\n\n", e.random_delta, 100.0 * e.random_flip_share);
  md += "Deleting tokens in order until the decision flips (at most n − 1 of n):\n\n";
  md += "| order | sentences that flip | mean fraction removed at the flip |\n|---|---|---|\n";
  const auto row = [](const char* name, const ErasureOrderSummary& o) {
    return std::string("| ") + name + format(" | %.1f %% | %.3f |\n", 100.0 * o.share_flipped, o.mean_fraction);
  };
  md += row("attention", e.attention) + row("\\|gradient × input\\|", e.gradient) + row("random", e.random) + "\n";
  return md;
}

// Rollout and flow against the raw last-layer [CLS] attention, and the per-head table.
std::string transformer_markdown(const ExplainReport& r) {
  std::string md = "## Attention rollout and flow (Abnar & Zuidema 2020)\n\n";
  md += "[CLS]'s row of each, over the tokens, against the raw last-layer [CLS] attention (heads averaged).\n\n";
  md += "| [CLS] attention | –gradient τ | –LOO τ | –raw attention τ |\n|---|---|---|---|\n";
  md += "| raw, last layer | " + cell(find(r, "attention", "gradient")) + " | " + cell(find(r, "attention", "loo")) +
        " | |\n";
  for (const char* m : {"rollout", "flow"})
    md += std::string("| ") + m + " | " + cell(find(r, m, "gradient")) + " | " + cell(find(r, m, "loo")) + " | " +
          cell(find(r, "attention", m)) + " |\n";
  md +=
      "\n## Heads\n\nPooled over every query row of every sentence: mean entropy (nats), and the mean weight "
      "on [CLS], on the previous and the next token, and on punctuation tokens.\n\n";
  md += "| layer | head | entropy | [CLS] | previous | next | punctuation |\n|---|---|---|---|---|---|---|\n";
  const auto share = [](double sum, int64_t rows) {
    return rows > 0 ? format("%.3f", sum / static_cast<double>(rows)) : std::string("n/a");
  };
  for (size_t k = 0; k < r.heads.size(); ++k) {
    const HeadStatistics& h = r.heads[k];
    md += format("| %.0f | %.0f | ", static_cast<double>(static_cast<int64_t>(k) / r.heads_per_layer),
                 static_cast<double>(static_cast<int64_t>(k) % r.heads_per_layer)) +
          share(h.entropy, h.rows) + " | " + share(h.cls, h.rows) + " | " + share(h.previous, h.previous_rows) + " | " +
          share(h.next, h.next_rows) + " | " + share(h.punctuation, h.rows) + " |\n";
  }
  return md + "\n";
}

}  // namespace

std::string report_markdown(const ExplainReport& r, const json& context) {
  const TauSummary &ag = find(r, "attention", "gradient"), &al = find(r, "attention", "loo"),
                   &gl = find(r, "gradient", "loo");
  std::string md = "# Is the attention an explanation?\n\n";
  md += "Model `" + context.value("model", std::string("?")) + "`";
  if (context.contains("split")) md += ", " + context.at("split").get<std::string>() + " split";
  md +=
      ": " + std::to_string(r.sentences.size()) + " sentences explained (" + std::to_string(r.one_token_sentences) +
      " of one token, where τ is undefined and they are left out of the τ figures; " + std::to_string(r.skipped_empty) +
      " empty lines skipped" +
      (context.value("min_length", int64_t{0}) > 0
           ? "; " + std::to_string(context.value("shorter_than_min_length", int64_t{0})) + " sentences of fewer than " +
                 std::to_string(context.value("min_length", int64_t{0})) + " tokens left out (--min-length)"
           : std::string()) +
      ").\n\n";
  md += std::string(
            "Kendall τ-b per sentence (mean ± sd over sentences, share with p < 0.05), as in Jain & Wallace "
            "(2019), Table 2; tokens ranked by attention, |gradient × input| (") +
        (r.transformer ? "the full gradient: a Transformer's self-attention is not held constant"
                       : "attention held constant") +
        "), leave-one-out |Δŷ|.\n\n";
  md += "| | attention–gradient τ | attention–LOO τ | gradient–LOO τ | accuracy |\n";
  md += "|---|---|---|---|---|\n";
  md += "| attn (this model) | " + cell(ag) + " | " + cell(al) + " | " + cell(gl) + " | " +
        (r.labelled > 0 ? format("%.3f", r.accuracy) : std::string("n/a")) + " |\n";
  md +=
      "| Jain & Wallace, SST BiLSTM+tanh | 0.35 ± 0.21, 49 % sig. | 0.29 ± 0.19, 36 % sig. | 0.66 ± 0.16, 91 % sig. "
      "| 0.808 |\n\n";
  md += "Integrated gradients (zero baseline): attention–IG " + cell(find(r, "attention", "ig")) + "; IG–LOO " +
        cell(find(r, "ig", "loo")) + "; gradient–IG " + cell(find(r, "gradient", "ig")) +
        format("; completeness error mean %.2g, max %.2g.\n\n", r.ig_completeness_mean, r.ig_completeness_max) +
        format("%.1f %% of the attention weights are exactly 0 (a sparse normaliser gives them, softmax does not).\n\n",
               100.0 * r.attention_zero_share);
  if (r.with_permutations > 0)
    md += format(
        "Random permutation of the attention weights (encoder states fixed): the median over sentences of "
        "the per-sentence median |Δŷ| is %.3g; %.0f %% of sentences change by less than 0.01. "
        "report.json holds each sentence's median beside its maximum attention weight.\n\n",
        r.permutation_median_of_medians, 100.0 * r.share_permutation_median_below_001);
  if (r.with_adversarial > 0)
    md += format(
              "Adversarial attention (Jain & Wallace; encoder states fixed, candidates optimised to maximise the "
              "JS divergence from the attention while a hinge keeps |Δŷ| ≤ 0.01): the largest JSD found with "
              "|Δŷ| ≤ 0.05 has mean %.3f and median %.3f nats (ln 2 ≈ 0.693 is the maximum); ",
              r.adversarial_jsd_mean, r.adversarial_jsd_median) +
          format(
              "%.0f %% of sentences have an adversary above 0.5 nats; the reported candidates' mean |Δŷ| is "
              "%.4f. report.json holds each sentence's JSD beside its maximum attention weight.\n\n",
              100.0 * r.share_adversarial_jsd_above_05, r.adversarial_delta_mean);
  if (r.erasure.defined > 0) md += erasure_markdown(r.erasure);
  if (r.transformer) md += transformer_markdown(r);
  md += "## Verdict\n\n";
  if (gl.defined == 0) {
    md += "No sentence had two or more tokens: nothing to rank.\n";
    return md;
  }
  md += detail::tau_verdict(
      ag, al, gl,
      "The two importance measures agree with each other (gradient–LOO τ %.2f) much more than "
      "attention agrees with either (%.2f with the gradient, %.2f with LOO): read this model's attention "
      "as a weak hint about which tokens matter, not as an explanation.\n",
      "Attention tracks the importance measures about as well as they track each other "
      "(attention–gradient τ %.2f, attention–LOO τ %.2f, gradient–LOO τ %.2f): on this evidence its "
      "ranking of tokens is a fair guide to what the model uses.\n",
      "Attention and the importance measures agree only moderately (attention–gradient τ %.2f, "
      "attention–LOO τ %.2f, gradient–LOO τ %.2f): treat the attention map as suggestive, and check "
      "it with erasure before relying on it.\n");
  return md;
}

}  // namespace attn::explain
