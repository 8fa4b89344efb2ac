#include "attn/train/schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>

#include "attn/enum_names.h"
#include "attn/error.h"
#include "attn/number_format.h"

namespace attn::train {
namespace {

// "noam": another name of inverse_sqrt (Vaswani et al.'s schedule), accepted when parsing.
constexpr EnumName<LrScheduleKind> kScheduleNames[] = {{LrScheduleKind::constant, "constant"},
                                                       {LrScheduleKind::linear_warmup_decay, "linear_warmup_decay"},
                                                       {LrScheduleKind::cosine, "cosine"},
                                                       {LrScheduleKind::inverse_sqrt, "inverse_sqrt"},
                                                       {LrScheduleKind::inverse_sqrt, "noam"}};

}  // namespace

const char* lr_schedule_kind_name(LrScheduleKind kind) { return enum_name(kScheduleNames, kind, "?"); }

LrScheduleKind parse_lr_schedule_kind(const std::string& name) {
  if (const std::optional<LrScheduleKind> kind = enum_from_name(kScheduleNames, name)) return *kind;
  throw ValueError("lr schedule: unknown kind '" + name +
                   "' (expected constant, linear_warmup_decay, cosine, inverse_sqrt or noam)");
}

LrSchedule::LrSchedule(LrScheduleOptions o) : options_(o) {
  if (!std::isfinite(o.base_lr) || o.base_lr <= 0.0f)
    throw ValueError("lr schedule: base_lr must be finite and > 0, got " + format_number(o.base_lr));
  if (!std::isfinite(o.min_lr) || o.min_lr < 0.0f)
    throw ValueError("lr schedule: min_lr must be finite and >= 0, got " + format_number(o.min_lr));
  if (o.min_lr > o.base_lr)
    throw ValueError("lr schedule: min_lr " + format_number(o.min_lr) + " is larger than base_lr " +
                     format_number(o.base_lr));
  if (o.warmup_steps < 0)
    throw ValueError("lr schedule: warmup_steps must be >= 0, got " + std::to_string(o.warmup_steps));
  if (o.total_steps < 0)
    throw ValueError("lr schedule: total_steps must be >= 0, got " + std::to_string(o.total_steps));
  if ((o.kind == LrScheduleKind::linear_warmup_decay || o.kind == LrScheduleKind::cosine) &&
      o.total_steps <= o.warmup_steps)
    throw ValueError(std::string("lr schedule: ") + lr_schedule_kind_name(o.kind) +
                     " needs total_steps > warmup_steps, got total_steps " + std::to_string(o.total_steps) +
                     " and warmup_steps " + std::to_string(o.warmup_steps));
}

float LrSchedule::lr_at(int64_t step) const {
  if (step < 0) throw ValueError("lr schedule: step must be >= 0, got " + std::to_string(step));
  const LrScheduleOptions& o = options_;
  const double base = o.base_lr, low = o.min_lr;
  const double s = static_cast<double>(step) + 1.0;
  const double w = static_cast<double>(o.warmup_steps);
  if (o.warmup_steps > 0 && s <= w) return static_cast<float>(base * s / w);
  switch (o.kind) {
    case LrScheduleKind::constant:
      return o.base_lr;
    case LrScheduleKind::linear_warmup_decay: {
      const double p = std::clamp((s - w) / (static_cast<double>(o.total_steps) - w), 0.0, 1.0);
      return static_cast<float>(base + (low - base) * p);
    }
    case LrScheduleKind::cosine: {
      const double p = std::clamp((s - w) / (static_cast<double>(o.total_steps) - w), 0.0, 1.0);
      return static_cast<float>(low + (base - low) * 0.5 * (1.0 + std::cos(std::numbers::pi * p)));
    }
    case LrScheduleKind::inverse_sqrt:
      return static_cast<float>(std::max(low, base * std::sqrt(std::max(w, 1.0) / s)));
  }
  return o.base_lr;
}

}  // namespace attn::train
