// attn sweep: train several attention types, evaluate each against length, compare.
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "attn/io/atomic_file.h"
#include "attn/io/output_folder.h"
#include "attn/json.h"
#include "commands.h"
#include "common.h"

namespace attn::cli {
namespace fs = std::filesystem;

Comparison run_comparison(const std::vector<std::string>& attentions, const models::Seq2SeqConfig& base,
                          const std::string& score, const train::TrainOptions& options, const decode::EvalOptions& eval,
                          const std::string& out_dir) {
  // Check every configuration before any training starts.
  std::vector<models::Seq2SeqConfig> configs;
  as_usage([&] {
    options.validate();
    eval.validate();
    for (size_t i = 0; i < attentions.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (attentions[i] == attentions[j])
          throw ValueError("--attention lists '" + attentions[i] + "' twice (each decoder trains into its own folder)");
    // A --score applies to the decoders it belongs to (e.g. general to luong); it must
    // belong to at least one of them.
    bool score_used = score.empty();
    for (const std::string& attention : attentions) {
      models::Seq2SeqConfig c = base;
      c.attention = models::parse_attention_kind(attention);
      try {
        c.score = models::parse_score(c.attention, score);
        c.validate();
        score_used = true;
      } catch (const ValueError&) {
        c.score.reset();
        c.validate();
      }
      configs.push_back(c);
    }
    if (!score_used) throw ValueError("--score '" + score + "' fits none of the decoders given");
    for (const models::Seq2SeqConfig& c : configs) train::check_run_memory(c, options);
  });
  // The evaluation's memory and the output folder too: before models are trained to find out.
  for (const models::Seq2SeqConfig& c : configs) check_eval_memory(c, eval);
  io::check_output_folder(out_dir, "--out");
  fs::create_directories(out_dir);
  Comparison comparison;
  const data::TaskKind task = data::parse_task(options.task);
  for (size_t i = 0; i < configs.size(); ++i) {
    train::TrainOptions o = options;
    o.out_dir = (fs::path(out_dir) / attentions[i]).string();
    std::fprintf(stderr, "[%zu/%zu] training '%s' (%lld steps) into %s\n", i + 1, configs.size(), attentions[i].c_str(),
                 static_cast<long long>(o.steps), o.out_dir.c_str());
    train::TrainResult r = train::train_seq2seq(configs[i], o);
    if (r.interrupted) throw Interrupted();
    decode::LoadedSeq2Seq best = decode::load_seq2seq(r.model_path);
    std::fprintf(stderr, "[%zu/%zu] evaluating '%s' at %zu lengths\n", i + 1, configs.size(), attentions[i].c_str(),
                 eval.lengths.size());
    comparison.names.push_back(attentions[i]);
    comparison.results.push_back(decode::evaluate_seq2seq(*best.model, task, eval));
  }

  nlohmann::json records = nlohmann::json::array();
  std::string csv = "attention,length,token_accuracy,sequence_accuracy\n";
  for (size_t i = 0; i < comparison.names.size(); ++i)
    for (const auto& r : comparison.results[i]) {
      records.push_back({{"attention", comparison.names[i]},
                         {"length", r.length},
                         {"token_accuracy", r.token_accuracy},
                         {"sequence_accuracy", r.sequence_accuracy}});
      csv += comparison.names[i] + "," + std::to_string(r.length) + "," + std::to_string(r.token_accuracy) + "," +
             std::to_string(r.sequence_accuracy) + "\n";
    }
  io::write_file_atomically((fs::path(out_dir) / "results.csv").string(), csv);
  io::write_file_atomically((fs::path(out_dir) / "results.json").string(), json_text(records, 2) + "\n");
  write_accuracy_plot(out_dir, options.task, comparison.names, comparison.results);
  std::printf("%s", accuracy_table(comparison.names, comparison.results).c_str());
  return comparison;
}

void add_sweep_command(CLI::App& app) {
  struct Args {
    models::Seq2SeqConfig config;
    ModelChoiceNames names;
    train::TrainOptions options;
    decode::EvalOptions eval;
    std::string attentions = "none,bahdanau,luong";  // default of --attention
    std::string lengths = "5,10,20,40,80";
    std::string out;
  };
  auto args = std::make_shared<Args>();
  args->names.attention = args->attentions;  // --attention takes the comma-separated list here
  CLI::App* cmd =
      app.add_subcommand("sweep", "Train several attention types and compare their accuracy against length");
  add_model_options(cmd, args->config, args->names);
  cmd->get_option("--attention")->description("Comma-separated decoders: none, bahdanau, luong");
  add_training_options(cmd, args->options);
  add_threads_option(cmd);
  cmd->add_option("--eval-lengths", args->lengths, "Comma-separated evaluation lengths")->capture_default_str();
  cmd->add_option("--samples", args->eval.samples, "Evaluation examples per length")->capture_default_str();
  cmd->add_option("--beam", args->eval.beam, "Beam width for evaluation (1: greedy)")->capture_default_str();
  cmd->add_option("--out", args->out, "Output directory")->required();
  cmd->callback([args] {
    const std::vector<std::string> attentions = split_list(args->names.attention);
    if (attentions.empty()) throw UsageError("--attention needs at least one decoder");
    args->eval.lengths = parse_lengths(args->lengths);
    as_usage([&] { args->config.encoder = models::parse_rnn_cell(args->names.encoder); });
    train::TrainOptions o = args->options;
    o.out_dir = args->out;
    o.stop = &install_interrupt_flag();
    o.overwrite = true;  // a demo / sweep replaces the runs of its previous call
    run_comparison(attentions, args->config, args->names.score, o, args->eval, args->out);
    std::fprintf(stderr, "results: %s/results.csv, results.json, accuracy_vs_length.png/.svg\n", args->out.c_str());
  });
}

ATTN_REGISTER_COMMAND(40, add_sweep_command);

}  // namespace attn::cli
