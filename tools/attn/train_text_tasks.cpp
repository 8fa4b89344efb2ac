#include "train_text_tasks.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "attn/data/parallel.h"
#include "attn/data/tatoeba.h"
#include "attn/models/memory_estimate.h"
#include "attn/train/lm_trainer.h"
#include "attn/train/translation_trainer.h"
#include "commands.h"
#include "common.h"
#include "train_tasks.h"

namespace attn::cli {
namespace {

// The folder `task_dir` inside --data, or --data itself when it already is that folder.
std::string task_data_dir(const std::string& data, const std::string& task_dir, const std::string& marker) {
  namespace fs = std::filesystem;
  if (fs::exists(fs::path(data) / task_dir / marker)) return (fs::path(data) / task_dir).string();
  return data;
}

}  // namespace

void report_interrupt(bool interrupted, int64_t steps, const std::string& out) {
  if (!interrupted) return;
  const int signal = interrupt_signal();
  const char* name = signal == SIGTERM ? "SIGTERM" : signal == SIGHUP ? "SIGHUP" : "SIGINT";
  std::fprintf(stderr, "attn: interrupted (%s) at step %lld; saved %s/last.safetensors (continue with --resume)\n",
               name, static_cast<long long>(steps), out.c_str());
  Interrupted stop;
  stop.exit_code = 128 + (signal ? signal : SIGINT);
  throw stop;
}

std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), line;
  for (char c : all) line += c == '\0' ? ' ' : c;
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

void add_run_control_options(CLI::App* cmd, train::RunOptions& o) {
  // Not from a --config file: they say how this invocation treats the folder, not what the run is.
  cmd->add_flag(
         "--resume", o.resume,
         "Continue the run in --out from last.safetensors: bit-identical to an uninterrupted run of the same --steps. "
         "With more --steps it is not when the learning rate follows --steps (--lr-schedule cosine or "
         "linear_warmup_decay, or a default warm-up of a tenth of the run)")
      ->configurable(false);
  cmd->add_flag("--overwrite", o.overwrite, "Replace the run that --out holds (its models, log and tokenizer)")
      ->configurable(false);
  cmd->add_option("--max-minutes", o.max_minutes,
                  "Stop (and save) after this much training time, validation excluded (0: off)")
      ->capture_default_str();
  cmd->add_option(
         "--save-every", o.save_every_minutes,
         "Write last.safetensors every N minutes, so a killed run loses at most that much (0: only at the end)")
      ->capture_default_str();
  // Data-parallel runs (mpirun -np N attn train ...; docs/distributed.md).
  cmd->add_flag("--deterministic-reduce", o.deterministic_reduce,
                "Under mpirun: add the ranks' gradients in rank order, so repeated runs are bit-identical");
  cmd->add_option("--bucket-mb", o.bucket_mb, "Under mpirun: gradient all-reduce bucket size in MB")
      ->capture_default_str();
  cmd->add_flag("--reduce-after-backward", o.reduce_after_backward,
                "Under mpirun: start the all-reduce after backward instead of during it (to measure the overlap)");
}

void copy_run_controls(const train::RunOptions& from, train::RunOptions& to) {
  to.out_dir = from.out_dir;
  to.resume = from.resume;
  to.overwrite = from.overwrite;
  to.max_minutes = from.max_minutes;
  to.save_every_minutes = from.save_every_minutes;
  to.provenance = from.provenance;
  to.config_toml = from.config_toml;
  to.communicator = from.communicator;
  to.progress = from.progress;
  to.deterministic_reduce = from.deterministic_reduce;
  to.bucket_mb = from.bucket_mb;
  to.reduce_after_backward = from.reduce_after_backward;
}

void add_text_task_options(CLI::App* cmd, TextTaskArgs& a, const TrainGroups& g, OptionGroups& groups) {
  const std::vector<const OptionGroup*> translation = {&g.translation};
  groups.add(cmd->add_option("--src", a.src, "Source language")->capture_default_str(), translation);
  groups.add(cmd->add_option("--tgt", a.tgt, "Target language")->capture_default_str(), translation);
  groups.add(cmd->add_option("--tokenizer", a.tokenizer, "A SentencePiece model (default: learn a shared one)"),
             translation);
  groups.add(
      cmd->add_option("--vocab-size", a.vocab_size, "Pieces of the learned SentencePiece model")->capture_default_str(),
      translation);
  const std::vector<const OptionGroup*> batches = {&g.translation, &g.g2p, &g.asr};
  groups.add(
      cmd->add_option("--max-tokens", a.max_tokens, "Padded source + target tokens per batch")->capture_default_str(),
      batches);
  groups.add(cmd->add_option("--max-sentences", a.max_sentences,
                             "Sentences per batch at most (default: translate 128, g2p 256)"),
             batches);
  groups.add(cmd->add_option("--label-smoothing", a.label_smoothing,
                             "Label smoothing epsilon (default: translate 0.1, g2p 0)"),
             batches);
  groups.add(
      cmd->add_option("--eval-sentences", a.eval_sentences,
                      "Validation sentences (g2p: dev words), 0: all (default: translate 0, charlm 2000, g2p 0)"),
      {&g.translation, &g.lm, &g.g2p, &g.asr});
  groups.add(cmd->add_option("--enc-layers", a.encoder_layers,
                             "Transformer encoder layers (default: translate 3, sst2 transformer-cls 2 or --layers)"),
             {&g.transformer_seq2seq, &g.transformer_classifier});
  groups.add(
      cmd->add_option("--dec-layers", a.decoder_layers, "Transformer decoder layers (default: translate 3, charlm 4)"),
      {&g.transformer_seq2seq, &g.lm});
  groups.add(cmd->add_option("--norm", a.norm, "Transformer layer norm: pre | post")->capture_default_str(),
             {&g.transformer});
  groups.add(
      cmd->add_option("--positions", a.positions, "Transformer positions: sinusoidal | learned")->capture_default_str(),
      {&g.transformer});
  groups.add(cmd->add_option("--activation", a.activation, "Transformer feed-forward activation: relu | gelu")
                 ->capture_default_str(),
             {&g.transformer});
}

nlohmann::json rnn_translator_config(CLI::App* cmd, models::Seq2SeqConfig c, int64_t emb, int max_src_len,
                                     uint64_t seed) {
  if (!given(cmd, "--emb")) c.emb = emb;
  if (!given(cmd, "--hidden")) c.hidden = 256;
  if (!given(cmd, "--dropout")) c.dropout = 0.0f;
  c.max_src_len = max_src_len;
  c.seed = seed;
  return c.to_json();
}

void check_translator_config(models::TranslatorKind kind, const nlohmann::json& config) {
  as_usage([&] {
    nlohmann::json probe = config;
    models::set_translator_vocab(kind, probe, 16);
    models::make_translator(kind, probe);
  });
}

nlohmann::json transformer_config(CLI::App* cmd, const models::Seq2SeqConfig& c, const train::TrainOptions& t,
                                  const ClassifierArgs& s, const TextTaskArgs& a) {
  if (a.norm != "pre" && a.norm != "post") throw UsageError("--norm must be pre or post, got '" + a.norm + "'");
  nlohmann::json j = {{"d_model", s.d_model},
                      {"heads", c.heads},
                      {"ffn", s.ffn},
                      {"encoder_layers", a.encoder_layers},
                      {"decoder_layers", a.decoder_layers},
                      {"dropout", given(cmd, "--dropout") ? c.dropout : 0.1f},
                      {"norm_first", a.norm == "pre"},
                      {"activation", a.activation},
                      {"positions", a.positions},
                      {"seed", t.seed}};
  add_normalizer_json(cmd, c, j);
  if (c.pointer) j["pointer"] = true;  // the translation and summarization encoder-decoder only (option groups)
  return j;
}

namespace {

// --task translate (Multi30k) and --task summarize (a user's article/summary files): one
// trainer (train/translation_trainer.h), the data and the defaults differ.
void run_text_pairs(CLI::App* cmd, TrainArgs& args, bool summarize) {
  as_usage([&] { args.names.apply(args.config); });
  const models::Seq2SeqConfig& c = args.config;
  const train::TrainOptions& t = args.options;
  const ClassifierArgs& s = args.classifier;  // --model --data --d-model --ffn --train-limit
  const TextTaskArgs& a = args.text;
  if (summarize && s.data.empty())
    throw UsageError(
        "--task summarize needs --data DIR (a folder with train.article, train.summary, val.article and "
        "val.summary, plain or .gz)");
  const std::string data_dir =
      summarize ? s.data
                : data_or_default(s.data, data::is_tatoeba_pair(a.src, a.tgt) ? "tatoeba-fra-eng" : "multi30k",
                                  "--task translate needs --data DIR (the multi30k or tatoeba-fra-eng folder, or the "
                                  "folder holding them)");
  models::TranslatorKind kind = models::TranslatorKind::rnn;
  if (given(cmd, "--model")) as_usage([&] { kind = models::parse_translator_kind(s.model); });
  const bool transformer = kind == models::TranslatorKind::transformer;
  train::TranslationOptions o;
  o.summarization = summarize;
  // Summaries: <split>.article and <split>.summary unless --src / --tgt name other suffixes.
  o.src_lang = summarize && !given(cmd, "--src") ? "article" : a.src;
  o.tgt_lang = summarize && !given(cmd, "--tgt") ? "summary" : a.tgt;
  o.data_dir = data_dir;
  if (!summarize) {  // Multi30k, or Tatoeba for fr-en / en-fr (data/parallel.h)
    data::CorpusFolder found;
    as_usage([&] { found = data::find_corpus(data_dir, o.src_lang, o.tgt_lang); });
    o.corpus = found.corpus;
    o.data_dir = found.dir;
  }
  o.tokenizer = a.tokenizer;
  o.vocab_size = a.vocab_size;
  // See et al. (2017) cut articles to 400 tokens; a translation's sentences are short.
  o.max_len = given(cmd, "--max-len") ? t.max_len : (summarize ? 400 : 100);
  o.train_limit = s.train_limit;
  o.max_tokens = a.max_tokens;
  o.max_sentences = a.max_sentences;
  o.steps = given(cmd, "--steps") ? t.steps : 10000;
  o.lr = given(cmd, "--lr") ? t.lr : (transformer ? 7e-4f : 1e-3f);
  o.lr_schedule = given(cmd, "--lr-schedule") ? t.lr_schedule : "inverse_sqrt";
  o.warmup = given(cmd, "--warmup") ? t.warmup : (transformer ? 1000 : 200);
  o.clip = t.clip;
  // The pointer's extended vocabulary has no uniform prior to smooth toward: no smoothing.
  o.label_smoothing = c.pointer && !given(cmd, "--label-smoothing") ? 0.0f : a.label_smoothing;
  if (c.pointer && o.label_smoothing != 0.0f) throw UsageError("--pointer needs --label-smoothing 0 (leave it out)");
  o.seed = t.seed;
  o.log_every = given(cmd, "--log-every") ? t.log_every : 100;
  o.eval_every = given(cmd, "--eval-every") ? t.eval_every : 1000;
  o.eval_sentences = a.eval_sentences;
  copy_run_controls(t, o);
  nlohmann::json config;
  if (transformer) {
    config = transformer_config(cmd, c, t, s, a);
    config["share_embeddings"] = a.tokenizer.empty();  // one learned model serves both languages
  } else {
    config = rnn_translator_config(cmd, c, 256, o.max_len, t.seed);
  }
  as_usage([&] { o.validate(); });
  check_translator_config(kind, config);
  const auto run = [&] { return train::train_translation(kind, config, o); };
  train_and_report(o, run, [](const train::TranslationResult& r) {
    std::printf(
        "trained %lld steps in %.0f s: final loss %.4f, best validation BLEU %.2f (greedy), %.0f target "
        "tokens/s\n",
        static_cast<long long>(r.steps_done), r.train_seconds, r.final_loss, r.best_val_bleu, r.tokens_per_second);
  });
}

void run_translation(CLI::App* cmd, TrainArgs& args) { run_text_pairs(cmd, args, false); }
void run_summarization(CLI::App* cmd, TrainArgs& args) { run_text_pairs(cmd, args, true); }

void run_char_lm(CLI::App* cmd, TrainArgs& args) {
  const models::Seq2SeqConfig& c = args.config;
  const train::TrainOptions& t = args.options;
  const ClassifierArgs& s = args.classifier;  // --model --data --d-model --ffn --train-limit
  const TextTaskArgs& a = args.text;
  const std::string data_dir =
      data_or_default(s.data, "tatoeba-fra-eng",
                      "--task charlm needs --data DIR (the tatoeba-fra-eng folder, or the folder holding it)");
  train::LmOptions o;
  o.data_dir = task_data_dir(data_dir, "tatoeba-fra-eng", "fra.txt.gz");
  o.max_chars = given(cmd, "--max-len") ? t.max_len : 128;
  o.train_limit = s.train_limit;
  o.batch = t.batch;
  o.steps = given(cmd, "--steps") ? t.steps : 3000;
  o.lr = given(cmd, "--lr") ? t.lr : 1e-3f;
  o.lr_schedule = given(cmd, "--lr-schedule") ? t.lr_schedule : "cosine";
  o.warmup = given(cmd, "--warmup") ? t.warmup : std::min<int64_t>(200, o.steps / 10);  // short runs still decay
  o.clip = t.clip;
  o.seed = t.seed;
  o.log_every = given(cmd, "--log-every") ? t.log_every : 100;
  o.eval_every = given(cmd, "--eval-every") ? t.eval_every : 500;
  o.eval_sentences = given(cmd, "--eval-sentences") ? a.eval_sentences : 2000;
  copy_run_controls(t, o);
  nlohmann::json j = transformer_config(cmd, c, t, s, a);
  j.erase("encoder_layers");
  j["decoder_layers"] = given(cmd, "--dec-layers") ? a.decoder_layers : 4;
  if (!given(cmd, "--d-model")) j["d_model"] = 128;
  if (!given(cmd, "--ffn")) j["ffn"] = 512;
  j["tgt_vocab"] = 16;  // set from the data by the trainer
  models::TransformerConfig config;
  as_usage([&] {
    o.validate();
    config = models::TransformerConfig::from_json(j);
    models::check_parameter_memory(config, "the character LM");  // an impossible size: exit 2
    models::check_training_memory(config, o.batch, 0, static_cast<int64_t>(o.max_chars) + 1);
  });
  train_and_report(
      o, [&] { return train::train_char_lm(config, o); },
      [](const train::LmResult& r) {
        std::printf("trained %lld steps in %.0f s: final loss %.4f, best validation %.4f nats/char (%.3f bits/char)\n",
                    static_cast<long long>(r.steps_done), r.train_seconds, r.final_loss, r.best_val_loss,
                    r.best_val_bits_per_char);
      });
}

// The models of translate and summarize (both write translation checkpoints), with what
// `attn export` makes of each.
const std::vector<TaskModel> kTranslatorModels = {
    {"rnn", TrainTarget::translate_rnn, {ExportTarget::torch}},
    {"transformer", TrainTarget::translate_transformer, {ExportTarget::torch, ExportTarget::ctranslate2}}};

}  // namespace

ATTN_REGISTER_TASK({.order = 30,
                    .name = "translate",
                    .summary = "translation on Multi30k, or Tatoeba for --src fr --tgt en (--data DIR; --src --tgt): "
                               "--model rnn | transformer",
                    .writes = decode::CheckpointKind::translation,
                    .models = kTranslatorModels,
                    .run = run_translation});
ATTN_REGISTER_TASK({.order = 32,
                    .name = "summarize",
                    .summary = "summarisation of your article/summary files (--data DIR): --model rnn | transformer",
                    .writes = decode::CheckpointKind::translation,
                    .models = kTranslatorModels,
                    .run = run_summarization});
ATTN_REGISTER_TASK({.order = 40,
                    .name = "charlm",
                    .summary = "a character language model on Tatoeba's French (--data DIR): --model transformer",
                    .writes = decode::CheckpointKind::lm,
                    .models = {{"transformer", TrainTarget::charlm}},
                    .run = run_char_lm});

}  // namespace attn::cli
