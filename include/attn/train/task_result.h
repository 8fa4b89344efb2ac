#pragma once
// What every trainer's result starts with: the run loop's summary (run.h's RunResult) in
// the fields the trainers have always reported.
#include <cstdint>
#include <string>

#include "attn/train/run.h"

namespace attn::train {

struct TaskResult {
  int64_t steps_done = 0;
  bool interrupted = false;
  double final_loss = 0.0;     // the reported loss of the last step
  double train_seconds = 0.0;  // training time, validation excluded
  double seconds = 0.0;        // wall time of the whole run
  std::string model_path;      // out_dir/model.safetensors

  TaskResult() = default;
  explicit TaskResult(const RunResult& r)
      : steps_done(r.state.step),
        interrupted(r.interrupted),
        final_loss(r.final_loss),
        train_seconds(r.train_seconds),
        seconds(r.seconds),
        model_path(r.model_path) {}
};

// count / seconds, 0 for no time (a rate for a result's tokens per second).
inline double per_second(double count, double seconds) { return seconds > 0 ? count / seconds : 0.0; }

}  // namespace attn::train
