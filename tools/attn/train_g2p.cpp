// attn train --task g2p: grapheme-to-phoneme conversion on CMUdict (train/g2p_trainer.h),
// registered in the task registry (train_tasks.h). --model rnn (default; any --attention and
// --score, location_aware included) or transformer.
#include <cstdio>

#include "attn/models/translator.h"
#include "attn/train/g2p_trainer.h"
#include "train_error_rate_tasks.h"
#include "train_tasks.h"

namespace attn::cli {
namespace {

void run_g2p(CLI::App* cmd, TrainArgs& args) {
  as_usage([&] { args.names.apply(args.config); });
  const models::Seq2SeqConfig& c = args.config;
  const train::TrainOptions& t = args.options;
  const ClassifierArgs& s = args.classifier;  // --model --data --d-model --ffn --train-limit
  const TextTaskArgs& a = args.text;
  models::TranslatorKind kind = models::TranslatorKind::rnn;
  if (given(cmd, "--model")) as_usage([&] { kind = models::parse_translator_kind(s.model); });
  const bool transformer = kind == models::TranslatorKind::transformer;
  // Letters in, phonemes out: no source token is a target token to copy.
  if (c.pointer)
    throw UsageError("--pointer does not apply to --task g2p (letters and phonemes are different vocabularies)");
  train::G2pOptions o;
  o.data_dir =
      data_or_default(s.data, "cmudict", "--task g2p needs --data DIR (the cmudict folder, or the folder holding it)");
  o.train_limit = s.train_limit;
  o.eval_words = a.eval_sentences;
  o.lr = given(cmd, "--lr") ? t.lr : (transformer ? 5e-4f : 1e-3f);
  copy_given_run_options(cmd, a, t, o);
  nlohmann::json config;
  if (transformer) {
    config = transformer_config(cmd, c, t, s, a);
    if (!given(cmd, "--d-model")) config["d_model"] = 256;
    if (!given(cmd, "--ffn")) config["ffn"] = 1024;
    config["max_len"] = 64;  // positions: the longest CMUdict word and pronunciation have 28 symbols
  } else {
    config = rnn_translator_config(cmd, c, 128, 64, t.seed);
  }
  as_usage([&] { o.validate(); });
  check_translator_config(kind, config);
  train_and_report(
      o, [&] { return train::train_g2p(kind, config, o); },
      [](const train::G2pResult& r) { print_error_rate_summary(r, "PER", r.best_val_per, r.dev_words, "words"); });
}

}  // namespace

ATTN_REGISTER_TASK({.order = 35,
                    .name = "g2p",
                    .summary = "grapheme-to-phoneme conversion on CMUdict (--data DIR): --model rnn | transformer",
                    .writes = decode::CheckpointKind::g2p,
                    .models = {{"rnn", TrainTarget::g2p_rnn}, {"transformer", TrainTarget::g2p_transformer}},
                    .run = run_g2p});

}  // namespace attn::cli
