#pragma once
// What the commands of the error-rate tasks (asr, g2p: train/asr_trainer.h, g2p_trainer.h)
// share: their run options, whose defaults the task's options struct keeps (a flag given on
// the command line replaces the default, one not given leaves it), and the summary line.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "attn/train/seq2seq_trainer.h"
#include "train_text_tasks.h"

namespace attn::cli {

// Copies --max-tokens --max-sentences --label-smoothing --steps --lr-schedule --warmup --clip
// --seed --log-every --eval-every and the run controls from `t` and `a` into `o`. Without
// --warmup, the default warm-up is capped at a tenth of the steps (short runs still decay).
// --lr is left to the task (its default may depend on the model).
template <class Options>
void copy_given_run_options(const CLI::App* cmd, const TextTaskArgs& a, const train::TrainOptions& t, Options& o) {
  if (given(cmd, "--max-tokens")) o.max_tokens = a.max_tokens;
  if (given(cmd, "--max-sentences")) o.max_sentences = a.max_sentences;
  if (given(cmd, "--label-smoothing")) o.label_smoothing = a.label_smoothing;
  if (given(cmd, "--steps")) o.steps = t.steps;
  if (given(cmd, "--lr-schedule")) o.lr_schedule = t.lr_schedule;
  o.warmup = given(cmd, "--warmup") ? t.warmup : std::min<int64_t>(o.warmup, o.steps / 10);
  o.clip = t.clip;
  o.seed = t.seed;
  if (given(cmd, "--log-every")) o.log_every = t.log_every;
  if (given(cmd, "--eval-every")) o.eval_every = t.eval_every;
  copy_run_controls(t, o);
}

// "trained 900 steps in 310 s: final loss 0.8123, best dev CER 21.50 %, WER 48.00 % (greedy,
// 200 utterances)": `rate` names the kept model's dev error rate, `items` what it counted.
template <class Result>
void print_error_rate_summary(const Result& r, const char* rate, double best_rate, int64_t items, const char* what) {
  std::printf("trained %lld steps in %.0f s: final loss %.4f, best dev %s %.2f %%, WER %.2f %% (greedy, %lld %s)\n",
              static_cast<long long>(r.steps_done), r.train_seconds, r.final_loss, rate, 100 * best_rate,
              100 * r.best_val_wer, static_cast<long long>(items), what);
}

}  // namespace attn::cli
