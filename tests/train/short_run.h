#pragma once
// The run options the trainer tests share: a short, quiet run.
#include <cstdint>
#include <string>

#include "attn/train/run.h"

namespace attn::testing {

// `o` set to run `steps` steps at the constant rate `lr` (no warm-up), validate once at the
// end, write to `out_dir` and print no progress.
inline void short_run(train::RunOptions& o, const std::string& out_dir, int64_t steps, float lr) {
  o.steps = steps;
  o.lr = lr;
  o.lr_schedule = "constant";
  o.warmup = 0;
  o.eval_every = steps;
  o.out_dir = out_dir;
  o.progress = nullptr;
}

}  // namespace attn::testing
