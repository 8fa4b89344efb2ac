// attn demo: the founding experiment of attention in one command. A GRU encoder-decoder
// without attention loses long sequences on the copy task; Bahdanau and Luong attention
// keep them.
#include <cstdio>
#include <filesystem>

#include "attn/data/tasks.h"
#include "attn/parallel.h"
#include "commands.h"
#include "common.h"

namespace attn::cli {
namespace fs = std::filesystem;

void add_demo_command(CLI::App& app) {
  struct Args {
    models::Seq2SeqConfig config;
    train::TrainOptions options;
    decode::EvalOptions eval;
    std::string out = "attn-demo";
  };
  auto args = std::make_shared<Args>();
  // Built-in defaults: sized to finish in minutes on 2 cores (see README for timings).
  args->config.hidden = 128;
  args->config.emb = 64;
  args->options.task = "copy";
  args->options.min_len = 5;
  args->options.max_len = 80;
  args->options.steps = 1200;
  args->options.batch = 64;
  args->options.bucket = 8;  // batches of similar lengths: about 1.5x less padding work
  args->options.lr = 3e-3f;
  args->options.lr_schedule = "cosine";
  args->options.log_every = 50;
  args->options.eval_every = 400;
  args->options.eval_samples = 100;
  args->eval.lengths = {5, 10, 20, 40, 80};
  args->eval.samples = 100;

  CLI::App* cmd = app.add_subcommand(
      "demo", "Train no-attention, Bahdanau and Luong models on the copy task and show accuracy against length");
  cmd->add_option("--out", args->out, "Output directory")->capture_default_str();
  cmd->add_option("--steps", args->options.steps, "Training steps per model")->capture_default_str();
  cmd->add_option("--hidden", args->config.hidden, "RNN hidden size")->capture_default_str();
  cmd->add_option("--samples", args->eval.samples, "Evaluation examples per length")->capture_default_str();
  cmd->add_option("--seed", args->options.seed, "Seed")->capture_default_str()->check(integer_at_least(0));
  add_threads_option(cmd);
  cmd->callback([args] {
    train::TrainOptions o = args->options;
    o.out_dir = args->out;
    o.stop = &install_interrupt_flag();
    o.overwrite = true;  // a demo / sweep replaces the runs of its previous call
    as_usage([&] {       // before the banner: a usage error is one line
      o.validate();
      args->eval.validate();
    });
    std::fprintf(stderr,
                 "attn demo: copy task, GRU encoder-decoder (hidden %d, emb %d), lengths %d-%d, %lld steps per model, "
                 "%d threads\n",
                 args->config.hidden, args->config.emb, o.min_len, o.max_len, static_cast<long long>(o.steps),
                 num_threads());
    Comparison c = run_comparison({"none", "bahdanau", "luong"}, args->config, "", o, args->eval, args->out);

    // One alignment picture from the Bahdanau model.
    decode::LoadedSeq2Seq bahdanau =
        decode::load_seq2seq((fs::path(args->out) / "bahdanau" / "model.safetensors").string());
    data::TaskGenerator generator(data::TaskKind::copy, 12, 12, 7);
    const std::string heatmap = (fs::path(args->out) / "alignment_bahdanau.png").string();
    write_alignment(*bahdanau.model, generator.random_source(12), 1, 1.0f, heatmap);

    std::printf("\nwrote %s/results.csv, %s/results.json,\n      %s/accuracy_vs_length.png (.svg) and %s\n",
                args->out.c_str(), args->out.c_str(), args->out.c_str(), heatmap.c_str());
  });
}

ATTN_REGISTER_COMMAND(10, add_demo_command);

}  // namespace attn::cli
