// attn explain: how far a classifier's attention tracks token importance (Jain & Wallace
// 2019). Over a data split: report.json and report.md in --out; for one --text: attention,
// gradient × input, leave-one-out and integrated gradients side by side. bilstm-attn and
// transformer-cls (rollout, flow and per-head statistics besides).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "attn/json.h"
#include "attn/data/sst2.h"
#include "attn/data/text.h"
#include "attn/decode/classify.h"
#include "attn/explain/diagnostic.h"
#include "attn/explain/report.h"
#include "attn/io/atomic_file.h"
#include "attn/io/output_folder.h"
#include "attn/train/checkpoint.h"
#include "attn/train/progress.h"
#include "attn/viz/plot.h"
#include "commands.h"
#include "common.h"
#include "explain_pictures.h"
#include "explain_seq2seq.h"

namespace attn::cli {
namespace {
using models::AttnClassifier;

struct Args {
  std::string model, data, split = "test", text, out, picture, input, attention_from;
  std::string trained_uniform, trained_imposed;  // --diagnostic: W&P's retrained variants
  bool diagnostic = false;
  int64_t limit = 0;
  int64_t min_length = 0;  // --data: leave out sentences of fewer tokens (Jain & Wallace drop those under 5)
  bool json = false;
  int adversarial_steps = 500;
  explain::ImportanceOptions options;
};

// The checkpoint's model, when it is of a kind explain supports: exactly one of the two set.
struct Explainable {
  AttnClassifier* attention_pooling = nullptr;
  models::TransformerClassifier* transformer = nullptr;
  int64_t max_tokens = 0;  // 0: any
};

Explainable explainable(decode::LoadedClassifier& loaded, const std::string& path) {
  Explainable e;
  e.attention_pooling = dynamic_cast<AttnClassifier*>(loaded.model.get());
  if (e.attention_pooling == nullptr) e.transformer = dynamic_cast<models::TransformerClassifier*>(&loaded.model->module());
  if (e.attention_pooling == nullptr && e.transformer == nullptr)
    throw ValueError(path + " is a '" + loaded.model->kind() +
                     "' classifier; attn explain supports 'bilstm-attn' and 'transformer-cls' checkpoints (models with "
                     "attention: train one with attn train --task sst2 --model bilstm-attn)");
  e.max_tokens = loaded.model->max_tokens();
  return e;
}

explain::ExplainedSentence explain_text(const Explainable& model, const data::Vocab& vocab, const std::string& text,
                                        int32_t gold, const explain::ImportanceOptions& options) {
  explain::ExplainedSentence s;
  s.text = text;
  s.tokens = data::sst2_tokens(text);
  if (model.max_tokens > 0 && static_cast<int64_t>(s.tokens.size()) > model.max_tokens)
    s.tokens.resize(static_cast<size_t>(model.max_tokens));  // as attn classify keeps the first ones
  s.gold = gold;
  std::vector<int32_t> ids;
  for (const auto& t : s.tokens) ids.push_back(vocab.id(t));
  s.importance = model.attention_pooling ? explain::explain_sentence(*model.attention_pooling, ids, options)
                                         : explain::explain_sentence(*model.transformer, ids, s.tokens, options);
  const explain::EmbeddingClassifier differentiable = model.attention_pooling
                                                          ? explain::embedding_classifier(*model.attention_pooling)
                                                          : explain::embedding_classifier(*model.transformer);
  s.erasure = explain::erasure(differentiable, ids, s.importance.label, s.importance.attention, s.importance.gradient,
                               options.seed);
  return s;
}

std::string tau_text(const explain::SentenceImportance& m, const explain::TauPair& pair) {
  const explain::KendallTau k = explain::sentence_tau(m, pair);
  if (!k.defined) return "undefined (" + k.undefined_reason + ")";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.3f (p = %.3g)", k.tau, k.p_value);
  return buffer;
}

void print_sentence(const decode::LoadedClassifier& loaded, const explain::ExplainedSentence& s, bool json) {
  const explain::SentenceImportance& m = s.importance;
  if (json) {
    explain::ExplainReport one = explain::summarise({s});
    std::printf("%s\n", json_text(explain::report_json(one, {{"model", loaded.model->kind()}}).at("sentences").at(0)).c_str());
    return;
  }
  std::printf("%s %.4f  %s\n", loaded.labels.at(static_cast<size_t>(m.label)).c_str(), m.probability, s.text.c_str());
  const bool transformer = !m.rollout.empty();
  std::printf("  attention: %s; gradient x input %s; leave-one-out |dy|; integrated gradients (zero baseline, %zu "
              "tokens)%s\n",
              transformer ? "the last layer's [CLS] row averaged over heads, without [CLS]"
                          : loaded.model->attention_description().c_str(),
              transformer ? "(full gradient)" : "with the attention held constant", s.tokens.size(),
              transformer ? "; [CLS]'s attention rollout and flow" : "");
  std::printf("  %-18s %9s %11s %9s %11s", "token", "attention", "grad x in", "LOO", "IG");
  if (transformer) std::printf(" %9s %9s", "rollout", "flow");
  std::printf("\n");
  for (size_t i = 0; i < s.tokens.size(); ++i) {
    const std::string loo = m.has_leave_one_out ? std::to_string(m.leave_one_out[i]).substr(0, 8) : "n/a";
    std::printf("  %-18s %9.4f %11.5f %9s %11.5f", s.tokens[i].c_str(), m.attention[i], m.gradient[i], loo.c_str(),
                m.integrated_gradients[i]);
    if (transformer) std::printf(" %9.4f %9.4f", m.rollout[i], m.flow[i]);
    std::printf("\n");
  }
  if (!m.has_leave_one_out) std::printf("  (one token: leave-one-out would leave nothing to classify; tau is undefined)\n");
  std::printf("  IG completeness error %.3g (sum of IG vs y(x) - y(0) = %.4f - %.4f)\n", m.ig_completeness_error,
              m.probability, m.baseline_probability);
  if (m.has_permutations())
    std::printf("  permutation of the attention (%zu draws): median |dy| %.4g; max attention %.3f\n",
                m.permutation_deltas.size(), m.permutation_median,
                *std::max_element(m.attention.begin(), m.attention.end()));
  if (m.has_adversarial)
    std::printf("  adversarial attention (%zu candidates): max JSD %.4f nats with |dy| %.4f (<= 0.05); max attention "
                "%.3f\n",
                m.adversarial.final_jsd.size(), m.adversarial.jsd, m.adversarial.delta, m.adversarial.max_attention);
  if (s.erasure.defined) {
    const auto flip = [](const explain::ErasureOrder& o) {
      return o.flipped() ? std::to_string(o.removed_to_flip) : std::string("none");
    };
    std::printf("  erasure: the top-attended token |dy| %.4f (%s), a random token %.4f on average; tokens removed "
                "until the decision flips: attention order %s, gradient order %s, random order %s\n",
                s.erasure.top_delta, s.erasure.top_flips ? "flips" : "no flip", s.erasure.random_delta,
                flip(s.erasure.attention).c_str(), flip(s.erasure.gradient).c_str(), flip(s.erasure.random).c_str());
  }
  for (const auto& pair : explain::tau_pairs_for(m))
    std::printf("  tau %-20s %s\n", (pair.first + "-" + pair.second).c_str(), tau_text(m, pair).c_str());
}

// One sentence's measures as a heatmap (PNG, SVG or PDF by the extension): one row per measure
// (attention, |gradient x input|, LOO, |IG|, and rollout and flow for transformer-cls), each
// divided by its row's maximum so the darkest cell is the token that measure ranks first.
void write_sentence_picture(const explain::ExplainedSentence& s, const std::string& path) {
  const explain::SentenceImportance& m = s.importance;
  viz::Heatmap map;
  map.title = "Token importance, each row scaled to its maximum: " + s.text;
  map.col_labels = s.tokens;
  std::vector<float> panel;
  for (const char* measure : {"attention", "gradient", "loo", "ig", "rollout", "flow"}) {
    const std::vector<float> row = explain::ranking(m, measure);
    if (row.empty()) continue;  // LOO of one token; rollout and flow of bilstm-attn
    const float top = *std::max_element(row.begin(), row.end());
    for (float v : row) panel.push_back(top > 0.0f ? v / top : 0.0f);
    const std::string name = measure;
    map.row_labels.push_back(name == "gradient" ? "|grad x input|" : name == "ig" ? "|IG|" : name);
  }
  map.panels = {panel};
  viz::write_heatmap(map, path);
}

// plot as DIR/name.png and DIR/name.svg.
void write_both(const viz::LinePlot& plot, const std::string& dir, const std::string& name) {
  for (const char* extension : {".png", ".svg"})
    viz::write_line_plot(plot, (std::filesystem::path(dir) / (name + extension)).string());
}

// The mean of value(sentence) per bin of 0.1 of the sentence's maximum attention weight, over
// the sentences where it is defined (an empty bin: a gap).
viz::Series binned_by_max_attention(
    const explain::ExplainReport& r, const std::string& name,
    const std::function<std::optional<double>(const explain::SentenceImportance&)>& value) {
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

// The report's pictures: the τ histograms (as frequency polygons: the share of sentences in
// each τ bin of width 0.1), the erasure curves (the share of sentences whose decision has
// flipped with at most a fraction f of their tokens removed), and for bilstm-attn the
// permutation medians and the adversarial JSDs against the maximum attention weight (the mean
// per bin of 0.1).
void write_pictures(const explain::ExplainReport& r, const std::string& dir) {
  viz::LinePlot tau{"Kendall tau per sentence", "tau (bin centre; bins of 0.1)", "share of sentences", {}, 0.0, {}};
  for (const auto& t : r.taus) {
    const std::string name = t.pair.first + "-" + t.pair.second;
    if (t.defined == 0 || name == "attention-ig" || name == "ig-loo" || name == "gradient-ig" ||
        name == "attention-rollout" || name == "attention-flow" || name == "rollout-gradient" || name == "flow-gradient")
      continue;
    tau.series.push_back(tau_histogram(t));
  }
  if (!tau.series.empty()) write_both(tau, dir, "tau");

  if (r.erasure.defined > 0) {
    viz::LinePlot erasure{"Erasure until the decision flips (Serrano & Smith)", "fraction of tokens removed, at most",
                          "share of sentences flipped", {}, 0.0, 1.0};
    const std::vector<std::pair<std::string, const explain::ErasureOrder explain::SentenceErasure::*>> orders = {
        {"attention order", &explain::SentenceErasure::attention},
        {"|gradient x input| order", &explain::SentenceErasure::gradient},
        {"random order", &explain::SentenceErasure::random}};
    for (const auto& [name, member] : orders) {
      viz::Series series{name, {}, {}};
      for (int step = 0; step <= 20; ++step) {
        const double f = 0.05 * step;
        double flipped = 0.0;
        for (const auto& s : r.sentences)
          if (s.erasure.defined && (s.erasure.*member).flipped() && (s.erasure.*member).fraction <= f + 1e-12) flipped += 1;
        series.x.push_back(f);
        series.y.push_back(flipped / static_cast<double>(r.erasure.defined));
      }
      erasure.series.push_back(series);
    }
    write_both(erasure, dir, "erasure");
  }

  if (r.with_permutations > 0) {
    viz::LinePlot permutation{"Permuting the attention (Jain & Wallace)", "maximum attention weight (bin centre)",
                              "mean of the per-sentence median |dy|", {}, 0.0, {}};
    permutation.series.push_back(binned_by_max_attention(r, "median |dy| over the permutations", [](const auto& m) {
      return m.has_permutations() ? std::optional<double>(m.permutation_median) : std::nullopt;
    }));
    write_both(permutation, dir, "permutation");
  }
  if (r.with_adversarial > 0) {
    viz::LinePlot adversarial{"Adversarial attention (Jain & Wallace)", "maximum attention weight (bin centre)",
                              "mean of the per-sentence max JSD (nats), |dy| <= 0.05", {}, 0.0, std::log(2.0)};
    adversarial.series.push_back(binned_by_max_attention(r, "max JSD from the attention", [](const auto& m) {
      return m.has_adversarial && m.attention.size() >= 2 ? std::optional<double>(m.adversarial.jsd) : std::nullopt;
    }));
    write_both(adversarial, dir, "adversarial");
  }
}

void run_split(const decode::LoadedClassifier& loaded, const Explainable& model, const Args& a) {
  std::vector<data::LabeledText> examples = data::read_sst2(data::sst2_split_path(a.data, a.split));
  const size_t before = examples.size();
  std::erase_if(examples, [&](const data::LabeledText& e) {
    return static_cast<int64_t>(data::sst2_tokens(e.text).size()) < a.min_length;
  });
  const int64_t shorter = static_cast<int64_t>(before - examples.size());
  if (a.limit > 0 && static_cast<int64_t>(examples.size()) > a.limit) examples.resize(static_cast<size_t>(a.limit));
  const auto start = std::chrono::steady_clock::now();
  std::vector<explain::ExplainedSentence> sentences;
  int64_t skipped = 0;
  {
    train::Progress progress("explain", static_cast<int64_t>(examples.size()));
    for (size_t i = 0; i < examples.size(); ++i) {
      if (data::sst2_tokens(examples[i].text).empty()) {
        ++skipped;
      } else {
        sentences.push_back(explain_text(model, loaded.vocab, examples[i].text, examples[i].label, a.options));
      }
      progress.update(static_cast<int64_t>(i + 1), {});
    }
    progress.finish();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const nlohmann::json context = {{"model", a.model},
                                  {"kind", loaded.model->kind()},
                                  {"config", loaded.model->config_json()},
                                  {"data", a.data},
                                  {"split", a.split},
                                  {"limit", a.limit},
                                  {"min_length", a.min_length},
                                  {"shorter_than_min_length", shorter},
                                  {"ig_steps", a.options.ig_steps},
                                  {"permutations", a.options.permutations},
                                  {"adversarial_steps", a.adversarial_steps},
                                  {"adversarial_candidates", a.options.adversarial.candidates},
                                  {"seed", a.options.seed},
                                  {"seconds", seconds}};
  const explain::ExplainReport report = explain::summarise(std::move(sentences), skipped);
  const nlohmann::json j = explain::report_json(report, context);
  std::filesystem::create_directories(a.out);
  io::write_file_atomically((std::filesystem::path(a.out) / "report.json").string(), json_text(j, 1) + "\n");
  io::write_file_atomically((std::filesystem::path(a.out) / "report.md").string(),
                            explain::report_markdown(report, context));
  write_pictures(report, a.out);
  if (a.json) {
    nlohmann::json summary = j;
    summary.erase("sentences");
    std::printf("%s\n", json_text(summary).c_str());
  } else {
    std::printf("%s", explain::report_markdown(report, context).c_str());
  }
  std::fprintf(stderr, "explained %zu sentences in %.0f s: %s/report.json, %s/report.md\n", report.sentences.size(),
               seconds, a.out.c_str(), a.out.c_str());
}

void check_diagnostic_args(const Args& a, const CLI::App& cmd) {
  for (const char* flag : {"--attention-from", "--trained-uniform", "--trained-imposed"})
    if (!a.diagnostic && cmd.count(flag)) throw UsageError(std::string(flag) + " applies to --diagnostic");
  if (a.attention_from.empty()) throw UsageError("--diagnostic needs --attention-from CHECKPOINT (a bilstm-attn model)");
  if (a.data.empty() || cmd.count("--text")) throw UsageError("--diagnostic needs --data (and no --text)");
  if (cmd.count("--limit") && a.limit < 1) throw UsageError("--limit must be >= 1, got " + std::to_string(a.limit));
  if (a.split != "dev" && a.split != "test") throw UsageError("--split must be dev or test, got '" + a.split + "'");
  for (const std::string* path : {&a.model, &a.attention_from, &a.trained_uniform, &a.trained_imposed}) {
    if (path->empty()) continue;
    decode::require_checkpoint_kind(*path, {decode::CheckpointKind::classifier}, "; --diagnostic needs bilstm-attn ones");
  }
}

// Wiegreffe & Pinter's diagnostic (explain/diagnostic.h): the `average` model --model pools
// with its own attention, with uniform weights and with --attention-from's attention; the
// accuracy of each on the split, beside --attention-from's own. Writes diagnostic.json and
// diagnostic.md to --out when given. With --trained-uniform / --trained-imposed, also W&P's
// retrained variants: an average model trained with uniform pooling, and one trained with
// --attention-from's attention frozen in (attn train --attention-from), scored the same way.
// A trained variant: loaded, an average-encoder bilstm-attn with uniform pooling (no pooling
// parameters), else ValueError naming the path.
struct TrainedVariant {
  decode::LoadedClassifier loaded;
  AttnClassifier* model = nullptr;
  int64_t right = 0;
};
std::unique_ptr<TrainedVariant> trained_variant(const std::string& path, const char* flag, const char* trained_with) {
  if (path.empty()) return nullptr;
  auto v = std::make_unique<TrainedVariant>();
  v->loaded = decode::load_classifier(path);
  v->model = dynamic_cast<AttnClassifier*>(v->loaded.model.get());
  if (v->model == nullptr || v->model->config().encoder != models::PoolingEncoder::average || v->model->config().pooling != models::PoolingScore::uniform)
    throw ValueError(std::string(flag) + " " + path + " is not an average-encoder bilstm-attn model with no pooling "
                     "parameters; train it with attn train --model bilstm-attn --encoder average " + trained_with);
  return v;
}

void run_diagnostic(const Args& a) {
  decode::LoadedClassifier student = decode::load_classifier(a.model);
  decode::LoadedClassifier teacher = decode::load_classifier(a.attention_from);
  auto* average = dynamic_cast<AttnClassifier*>(student.model.get());
  auto* source = dynamic_cast<AttnClassifier*>(teacher.model.get());
  if (average == nullptr || average->config().encoder != models::PoolingEncoder::average)
    throw ValueError(a.model + " is not a bilstm-attn checkpoint with --encoder average; --diagnostic imposes weights "
                     "on the non-contextual average model");
  if (source == nullptr)
    throw ValueError(a.attention_from + " is a '" + teacher.model->kind() +
                     "' classifier; --attention-from needs a bilstm-attn checkpoint (its pooling weights)");
  std::unique_ptr<TrainedVariant> trained_uniform = trained_variant(a.trained_uniform, "--trained-uniform", "--pooling uniform");
  std::unique_ptr<TrainedVariant> trained_imposed =
      trained_variant(a.trained_imposed, "--trained-imposed", "--attention-from M");
  if (trained_imposed && trained_imposed->loaded.vocab.tokens() != teacher.vocab.tokens())
    throw ValueError("--trained-imposed " + a.trained_imposed + " has another vocabulary than " + a.attention_from +
                     "; was it trained with --attention-from " + a.attention_from + "?");
  std::vector<data::LabeledText> examples = data::read_sst2(data::sst2_split_path(a.data, a.split));
  if (a.limit > 0 && static_cast<int64_t>(examples.size()) > a.limit) examples.resize(static_cast<size_t>(a.limit));
  int64_t total = 0, skipped = 0, own = 0, uniform = 0, imposed = 0, source_right = 0;
  const auto argmax = [](const std::vector<float>& p) {
    return static_cast<int32_t>(std::max_element(p.begin(), p.end()) - p.begin());
  };
  train::Progress progress("diagnostic", static_cast<int64_t>(examples.size()));
  for (size_t i = 0; i < examples.size(); ++i) {
    std::vector<std::string> tokens = data::sst2_tokens(data::valid_utf8(examples[i].text));
    for (int64_t limit : {student.model->max_tokens(), teacher.model->max_tokens()})
      if (limit > 0 && static_cast<int64_t>(tokens.size()) > limit) tokens.resize(static_cast<size_t>(limit));
    progress.update(static_cast<int64_t>(i + 1), {});
    if (tokens.empty()) {
      ++skipped;
      continue;
    }
    std::vector<int32_t> ids, source_ids;
    for (const auto& t : tokens) {
      ids.push_back(student.vocab.id(t));
      source_ids.push_back(teacher.vocab.id(t));
    }
    const int32_t gold = examples[i].label;
    const std::vector<float> source_attention = explain::own_attention(*source, source_ids);
    const std::vector<float> uniform_weights(tokens.size(), 1.0f / static_cast<float>(tokens.size()));
    ++total;
    own += argmax(explain::probabilities_with_weights(*average, ids, explain::own_attention(*average, ids))) == gold;
    uniform += argmax(explain::probabilities_with_weights(*average, ids, uniform_weights)) == gold;
    imposed += argmax(explain::probabilities_with_weights(*average, ids, source_attention)) == gold;
    source_right += argmax(explain::probabilities_with_weights(*source, source_ids, source_attention)) == gold;
    if (trained_uniform) {
      std::vector<int32_t> u_ids;
      for (const auto& t : tokens) u_ids.push_back(trained_uniform->loaded.vocab.id(t));
      trained_uniform->right +=
          argmax(explain::probabilities_with_weights(*trained_uniform->model, u_ids, uniform_weights)) == gold;
    }
    if (trained_imposed)
      trained_imposed->right +=
          argmax(explain::probabilities_with_weights(*trained_imposed->model, source_ids, source_attention)) == gold;
  }
  progress.finish();
  if (total == 0) throw ValueError("--diagnostic: the split has no sentence with tokens");
  const auto share = [&](int64_t right) { return static_cast<double>(right) / static_cast<double>(total); };
  nlohmann::json j = {{"model", a.model},
                            {"attention_from", a.attention_from},
                            {"attention_from_pooling", models::to_string(source->config().pooling)},
                            {"attention_from_encoder", models::to_string(source->config().encoder)},
                            {"data", a.data},
                            {"split", a.split},
                            {"sentences", total},
                            {"skipped_empty", skipped},
                            {"accuracy",
                             {{"average_own_attention", share(own)},
                              {"average_uniform", share(uniform)},
                              {"average_imposed_attention", share(imposed)},
                              {"attention_from_model", share(source_right)}}}};
  std::string trained_md;
  if (trained_uniform || trained_imposed) {
    nlohmann::json trained = {{"average_own_attention", share(own)}};
    trained_md = "\n## Trained with the weights frozen (Wiegreffe & Pinter's diagnostic)\n\n"
                 "| average model trained with | accuracy |\n|---|---|\n";
    char row[1024];
    if (trained_uniform) {
      trained["uniform"] = {{"model", a.trained_uniform}, {"accuracy", share(trained_uniform->right)}};
      std::snprintf(row, sizeof row, "| uniform weights (`%s`) | %.4f |\n", a.trained_uniform.c_str(),
                    share(trained_uniform->right));
      trained_md += row;
    }
    if (trained_imposed) {
      trained["imposed"] = {{"model", a.trained_imposed}, {"accuracy", share(trained_imposed->right)}};
      std::snprintf(row, sizeof row, "| the attention of `%s`, frozen (`%s`) | %.4f |\n", a.attention_from.c_str(),
                    a.trained_imposed.c_str(), share(trained_imposed->right));
      trained_md += row;
    }
    std::snprintf(row, sizeof row, "| its own learned attention (`%s`) | %.4f |\n", a.model.c_str(), share(own));
    trained_md += row;
    j["trained"] = trained;
  }
  char md[2048];
  std::snprintf(md, sizeof md,
                "# Wiegreffe & Pinter's diagnostic (test-time form)\n\n"
                "The non-contextual `average` model `%s` pools its own states with each set of weights; %lld "
                "sentences of the %s split.\n\n"
                "| weights imposed on the average model | accuracy |\n|---|---|\n"
                "| uniform (1/n) | %.4f |\n| its own learned attention | %.4f |\n"
                "| the attention of `%s` (%s encoder, %s pooling) | %.4f |\n\n"
                "(`%s` itself, with its own states: %.4f.)\n",
                a.model.c_str(), static_cast<long long>(total), a.split.c_str(), share(uniform), share(own),
                a.attention_from.c_str(), models::to_string(source->config().encoder), models::to_string(source->config().pooling),
                share(imposed), a.attention_from.c_str(), share(source_right));
  if (!a.out.empty()) {
    std::filesystem::create_directories(a.out);
    io::write_file_atomically((std::filesystem::path(a.out) / "diagnostic.json").string(), json_text(j, 1) + "\n");
    io::write_file_atomically((std::filesystem::path(a.out) / "diagnostic.md").string(), md + trained_md);
  }
  std::printf("%s", a.json ? (json_text(j) + "\n").c_str() : (md + trained_md).c_str());
}

}  // namespace

void add_explain_command(CLI::App& app) {
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "explain", "Is the attention an explanation? Attention against gradient, leave-one-out and integrated gradients "
                 "(Jain & Wallace 2019) for a bilstm-attn or transformer-cls checkpoint; rollout and flow for transformer-cls");
  cmd->add_option("--model", args->model, "Classifier checkpoint (model.safetensors) of kind bilstm-attn or transformer-cls")->required();
  cmd->add_option("--text", args->text, "One sentence: the measures side by side in the terminal");
  cmd->add_option("--data", args->data, "The data folder (holding sst2/): explain a whole split");
  cmd->add_option("--split", args->split, "dev | test")->capture_default_str();
  cmd->add_option("--limit", args->limit, "Explain the first N sentences of the split (N >= 1; default all)");
  cmd->add_option("--min-length", args->min_length,
                  "--data: leave out sentences of fewer than N tokens (Jain & Wallace's protocol: 5; default 0: none)");
  cmd->add_option("--out", args->out, "--data: the folder for report.json and report.md");
  cmd->add_option("--input", args->input, "A seq2seq (copy / reverse / sort) checkpoint: one source, e.g. \"5 9 3\"");
  cmd->add_option("--picture", args->picture, "--text: the measures as a heatmap, FILE.png, .svg or .pdf");
  cmd->add_flag("--json", args->json, "--text: the sentence as JSON; --data: the summary as JSON on stdout");
  cmd->add_option("--ig-steps", args->options.ig_steps, "Integrated-gradients steps")->capture_default_str();
  cmd->add_option("--permutations", args->options.permutations, "Random permutations of the attention per sentence")
      ->capture_default_str();
  cmd->add_option("--seed", args->options.seed, "The permutations' and adversarial candidates' seed")
      ->capture_default_str();
  cmd->add_option("--adversarial-steps", args->adversarial_steps,
                  "bilstm-attn: Adam steps of the adversarial attention search (0: off)")
      ->capture_default_str();
  cmd->add_option("--candidates", args->options.adversarial.candidates,
                  "bilstm-attn: adversarial candidate distributions per sentence (K)")
      ->capture_default_str();
  cmd->add_flag("--diagnostic", args->diagnostic,
                "Wiegreffe & Pinter's diagnostic: --model (an average-encoder bilstm-attn) pools with its own, "
                "uniform and --attention-from's attention over --data's split");
  cmd->add_option("--attention-from", args->attention_from, "--diagnostic: the bilstm-attn checkpoint whose attention is imposed");
  cmd->add_option("--trained-uniform", args->trained_uniform,
                  "--diagnostic: an average model trained with --pooling uniform, scored beside --model");
  cmd->add_option("--trained-imposed", args->trained_imposed,
                  "--diagnostic: an average model trained with --attention-from's attention frozen in (attn train "
                  "--attention-from), scored with that attention");
  add_threads_option(cmd);
  cmd->callback([args, cmd] {
    Args& a = *args;
    // A report's folder that cannot be one fails now, not after every sentence is explained.
    if (!a.out.empty()) io::check_output_folder(a.out, "--out");
    if (a.diagnostic || cmd->count("--attention-from") || cmd->count("--trained-uniform") ||
        cmd->count("--trained-imposed")) {
      check_diagnostic_args(a, *cmd);
      run_diagnostic(a);
      return;
    }
    if (a.min_length < 0) throw UsageError("--min-length must be >= 0, got " + std::to_string(a.min_length));
    if (cmd->count("--limit") && a.limit < 1)
      throw UsageError("--limit must be >= 1, got " + std::to_string(a.limit));
    using decode::CheckpointKind;
    const CheckpointKind kind = decode::require_checkpoint_kind(
        a.model, {CheckpointKind::classifier, CheckpointKind::seq2seq, CheckpointKind::translation},
        "; attn explain supports 'bilstm-attn' and 'transformer-cls' classifiers and encoder-decoders");
    if (kind != CheckpointKind::classifier) {
      if (cmd->count("--min-length")) throw UsageError("--min-length applies to classifier checkpoints (SST-2)");
      explain_seq2seq({.model = a.model, .kind = kind, .text = a.text, .input = a.input, .data = a.data,
                       .split = a.split, .out = a.out, .picture = a.picture, .limit = a.limit, .json = a.json,
                       .split_given = cmd->count("--split") > 0, .limit_given = cmd->count("--limit") > 0,
                       .text_given = cmd->count("--text") > 0, .input_given = cmd->count("--input") > 0, .seed = a.options.seed});
      return;
    }
    if (cmd->count("--input")) throw UsageError("--input is for seq2seq checkpoints (copy / reverse / sort); a classifier takes --text");
    if (a.split != "dev" && a.split != "test") throw UsageError("--split must be dev or test, got '" + a.split + "'");
    const bool one = cmd->count("--text") > 0;
    if (!one && a.data.empty() && !a.out.empty())  // a whole split: attn data get's folder, then ../shared/data
      a.data = data_or_default("", "sst2", "give exactly one of --text or --data");
    if (one == !a.data.empty()) throw UsageError("give exactly one of --text or --data");
    if (a.options.ig_steps < 1) throw UsageError("--ig-steps must be >= 1, got " + std::to_string(a.options.ig_steps));
    if (a.options.permutations < 1)
      throw UsageError("--permutations must be >= 1, got " + std::to_string(a.options.permutations));
    if (a.adversarial_steps < 0)
      throw UsageError("--adversarial-steps must be >= 0 (0: off), got " + std::to_string(a.adversarial_steps));
    if (a.options.adversarial.candidates < 1)
      throw UsageError("--candidates must be >= 1, got " + std::to_string(a.options.adversarial.candidates));
    a.options.adversarial.steps = a.adversarial_steps > 0 ? a.adversarial_steps : -1;
    a.options.adversarial.seed = a.options.seed;
    if (!one && a.out.empty()) throw UsageError("--data needs --out DIR (for report.json and report.md)");
    if (!one && cmd->count("--picture")) throw UsageError("--picture applies to --text (--data draws into --out)");
    if (one && (cmd->count("--out") || cmd->count("--limit") || cmd->count("--split") || cmd->count("--min-length")))
      throw UsageError("--out, --limit, --min-length and --split apply to --data, not --text");
    decode::LoadedClassifier loaded = decode::load_classifier(a.model);
    refuse_outputs_naming_inputs({{"--picture", a.picture}});
    const Explainable model = explainable(loaded, a.model);
    if (one) {
      const std::string text = data::valid_utf8(a.text);
      if (data::sst2_tokens(text).empty()) throw UsageError("--text has no tokens: there is nothing to explain");
      const explain::ExplainedSentence s = explain_text(model, loaded.vocab, text, -1, a.options);
      print_sentence(loaded, s, a.json);
      if (!a.picture.empty()) write_sentence_picture(s, a.picture);
      return;
    }
    run_split(loaded, model, a);
  });
}

ATTN_REGISTER_COMMAND(61, add_explain_command);

}  // namespace attn::cli
