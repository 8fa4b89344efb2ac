// attn explain: how far a classifier's attention tracks token importance (Jain & Wallace
// 2019). Over a data split: report.json and report.md in --out; for one --text: attention,
// gradient × input, leave-one-out and integrated gradients side by side. bilstm-attn and
// transformer-cls (rollout, flow and per-head statistics besides).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "attn/data/sst2.h"
#include "attn/data/text.h"
#include "attn/decode/classify.h"
#include "attn/explain/classifier_checkpoint.h"
#include "attn/explain/diagnostic.h"
#include "attn/explain/pictures.h"
#include "attn/explain/report.h"
#include "attn/io/atomic_file.h"
#include "attn/io/output_folder.h"
#include "attn/json.h"
#include "commands.h"
#include "common.h"
#include "explain_seq2seq.h"

namespace attn::cli {
namespace {

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
    std::printf("%s\n",
                json_text(explain::report_json(one, {{"model", loaded.model->kind()}}).at("sentences").at(0)).c_str());
    return;
  }
  std::printf("%s %.4f  %s\n", loaded.labels.at(static_cast<size_t>(m.label)).c_str(), m.probability, s.text.c_str());
  const bool transformer = !m.rollout.empty();
  std::printf(
      "  attention: %s; gradient x input %s; leave-one-out |dy|; integrated gradients (zero baseline, %zu "
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
  if (!m.has_leave_one_out)
    std::printf("  (one token: leave-one-out would leave nothing to classify; tau is undefined)\n");
  std::printf("  IG completeness error %.3g (sum of IG vs y(x) - y(0) = %.4f - %.4f)\n", m.ig_completeness_error,
              m.probability, m.baseline_probability);
  if (m.has_permutations())
    std::printf("  permutation of the attention (%zu draws): median |dy| %.4g; max attention %.3f\n",
                m.permutation_deltas.size(), m.permutation_median,
                *std::max_element(m.attention.begin(), m.attention.end()));
  if (m.has_adversarial)
    std::printf(
        "  adversarial attention (%zu candidates): max JSD %.4f nats with |dy| %.4f (<= 0.05); max attention "
        "%.3f\n",
        m.adversarial.final_jsd.size(), m.adversarial.jsd, m.adversarial.delta, m.adversarial.max_attention);
  if (s.erasure.defined) {
    const auto flip = [](const explain::ErasureOrder& o) {
      return o.flipped() ? std::to_string(o.removed_to_flip) : std::string("none");
    };
    std::printf(
        "  erasure: the top-attended token |dy| %.4f (%s), a random token %.4f on average; tokens removed "
        "until the decision flips: attention order %s, gradient order %s, random order %s\n",
        s.erasure.top_delta, s.erasure.top_flips ? "flips" : "no flip", s.erasure.random_delta,
        flip(s.erasure.attention).c_str(), flip(s.erasure.gradient).c_str(), flip(s.erasure.random).c_str());
  }
  for (const auto& pair : explain::tau_pairs_for(m))
    std::printf("  tau %-20s %s\n", (pair.first + "-" + pair.second).c_str(), tau_text(m, pair).c_str());
}

void run_split(const decode::LoadedClassifier& loaded, const explain::ExplainableClassifier& model, const Args& a) {
  int64_t shorter = 0;
  const std::vector<data::LabeledText> examples = explain::select_examples(
      data::read_sst2(data::sst2_split_path(a.data, a.split)), a.min_length, a.limit, &shorter);
  const auto start = std::chrono::steady_clock::now();
  explain::ExplainedExamples explained = with_progress("explain", [&](const auto& progress) {
    return explain::explain_classifier_examples(model, loaded.vocab, examples, a.options, progress);
  });
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
  const explain::ExplainReport report = explain::summarise(std::move(explained.sentences), explained.skipped_empty);
  const nlohmann::json j = explain::report_json(report, context);
  write_report(
      a.out, j, explain::report_markdown(report, context),
      [&](const std::string& dir) { explain::write_report_pictures(report, dir); }, "sentences", a.json);
  std::fprintf(stderr, "explained %zu sentences in %.0f s: %s/report.json, %s/report.md\n", report.sentences.size(),
               seconds, a.out.c_str(), a.out.c_str());
}

void check_diagnostic_args(const Args& a, const CLI::App& cmd) {
  for (const char* flag : {"--attention-from", "--trained-uniform", "--trained-imposed"})
    if (!a.diagnostic && cmd.count(flag)) throw UsageError(std::string(flag) + " applies to --diagnostic");
  if (a.attention_from.empty())
    throw UsageError("--diagnostic needs --attention-from CHECKPOINT (a bilstm-attn model)");
  if (a.data.empty() || cmd.count("--text")) throw UsageError("--diagnostic needs --data (and no --text)");
  if (cmd.count("--limit") && a.limit < 1) throw UsageError("--limit must be >= 1, got " + std::to_string(a.limit));
  if (a.split != "dev" && a.split != "test") throw UsageError("--split must be dev or test, got '" + a.split + "'");
  for (const std::string* path : {&a.model, &a.attention_from, &a.trained_uniform, &a.trained_imposed}) {
    if (path->empty()) continue;
    decode::require_checkpoint_kind(*path, {decode::CheckpointKind::classifier},
                                    "; --diagnostic needs bilstm-attn ones");
  }
}

// Wiegreffe & Pinter's diagnostic (explain/diagnostic.h): diagnostic.json and diagnostic.md in
// --out when given, the Markdown (or with --json the JSON) on stdout.
void run_diagnostic(const Args& a) {
  const explain::DiagnosticRun run{.model = a.model,
                                   .attention_from = a.attention_from,
                                   .trained_uniform = a.trained_uniform,
                                   .trained_imposed = a.trained_imposed,
                                   .data = a.data,
                                   .split = a.split,
                                   .limit = a.limit};
  const explain::DiagnosticResult result =
      with_progress("diagnostic", [&](const auto& progress) { return explain::run_diagnostic(run, progress); });
  const nlohmann::json j = explain::diagnostic_json(run, result);
  const std::string md = explain::diagnostic_markdown(run, result);
  if (!a.out.empty()) {
    std::filesystem::create_directories(a.out);
    io::write_file_atomically((std::filesystem::path(a.out) / "diagnostic.json").string(), json_text(j, 1) + "\n");
    io::write_file_atomically((std::filesystem::path(a.out) / "diagnostic.md").string(), md);
  }
  std::printf("%s", a.json ? (json_text(j) + "\n").c_str() : md.c_str());
}

}  // namespace

void add_explain_command(CLI::App& app) {
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "explain",
      "Is the attention an explanation? Attention against gradient, leave-one-out and integrated gradients "
      "(Jain & Wallace 2019) for a bilstm-attn or transformer-cls checkpoint; rollout and flow for transformer-cls");
  cmd->add_option("--model", args->model,
                  "Classifier checkpoint (model.safetensors) of kind bilstm-attn or transformer-cls")
      ->required();
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
  cmd->add_option("--attention-from", args->attention_from,
                  "--diagnostic: the bilstm-attn checkpoint whose attention is imposed");
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
    if (cmd->count("--limit") && a.limit < 1) throw UsageError("--limit must be >= 1, got " + std::to_string(a.limit));
    using decode::CheckpointKind;
    const CheckpointKind kind = decode::require_checkpoint_kind(
        a.model, {CheckpointKind::classifier, CheckpointKind::seq2seq, CheckpointKind::translation},
        "; attn explain supports 'bilstm-attn' and 'transformer-cls' classifiers and encoder-decoders");
    if (kind != CheckpointKind::classifier) {
      if (cmd->count("--min-length")) throw UsageError("--min-length applies to classifier checkpoints (SST-2)");
      explain_seq2seq({.model = a.model,
                       .kind = kind,
                       .text = a.text,
                       .input = a.input,
                       .data = a.data,
                       .split = a.split,
                       .out = a.out,
                       .picture = a.picture,
                       .limit = a.limit,
                       .json = a.json,
                       .split_given = cmd->count("--split") > 0,
                       .limit_given = cmd->count("--limit") > 0,
                       .text_given = cmd->count("--text") > 0,
                       .input_given = cmd->count("--input") > 0,
                       .seed = a.options.seed});
      return;
    }
    if (cmd->count("--input"))
      throw UsageError("--input is for seq2seq checkpoints (copy / reverse / sort); a classifier takes --text");
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
    const explain::ExplainableClassifier model = explain::explainable_classifier(loaded, a.model);
    if (one) {
      const std::string text = data::valid_utf8(a.text);
      if (data::sst2_tokens(text).empty()) throw UsageError("--text has no tokens: there is nothing to explain");
      const explain::ExplainedSentence s = explain::explain_classifier_text(model, loaded.vocab, text, -1, a.options);
      print_sentence(loaded, s, a.json);
      if (!a.picture.empty()) explain::write_sentence_picture(s, a.picture);
      return;
    }
    run_split(loaded, model, a);
  });
}

ATTN_REGISTER_COMMAND(61, add_explain_command);

}  // namespace attn::cli
