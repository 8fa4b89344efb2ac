#pragma once
// Learning-rate schedules.
//
// lr_at(step) gives the learning rate for the update with 0-based index `step` (the
// number of optimizer steps already taken). With s = step + 1 (1-based) and
// w = warmup_steps:
//
//   warmup (every kind, when w > 0 and s <= w):  base_lr · s / w
//   constant:             base_lr
//   linear_warmup_decay:  linear from base_lr at s = w down to min_lr at s = total_steps,
//                         min_lr afterwards
//   cosine:               min_lr + (base_lr − min_lr) · ½ (1 + cos(π · p)),
//                         p = (s − w) / (total_steps − w) clamped to [0, 1]
//   inverse_sqrt (Noam):  max(min_lr, base_lr · √(max(w, 1) / s)), so the peak base_lr
//                         is reached at s = w
//
// Validation (ValueError naming the option and its value): base_lr finite and > 0;
// min_lr finite, >= 0 and <= base_lr; warmup_steps >= 0; for linear_warmup_decay and
// cosine total_steps > warmup_steps; total_steps >= 0; lr_at with step < 0.
#include <cstdint>
#include <string>

namespace attn::train {

enum class LrScheduleKind { constant, linear_warmup_decay, cosine, inverse_sqrt };

// "constant", "linear_warmup_decay", "cosine", "inverse_sqrt" (also "noam").
const char* lr_schedule_kind_name(LrScheduleKind kind);
// ValueError listing the accepted names.
LrScheduleKind parse_lr_schedule_kind(const std::string& name);

struct LrScheduleOptions {
  LrScheduleKind kind = LrScheduleKind::constant;
  float base_lr = 1e-3f;
  int64_t warmup_steps = 0;
  int64_t total_steps = 0;
  float min_lr = 0.0f;
};

class LrSchedule {
 public:
  explicit LrSchedule(LrScheduleOptions options = {});
  float lr_at(int64_t step) const;
  const LrScheduleOptions& options() const { return options_; }

 private:
  LrScheduleOptions options_;
};

}  // namespace attn::train
