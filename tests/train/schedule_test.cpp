#include "attn/train/schedule.h"

#include <cmath>
#include <numbers>

#include "test_support.h"

namespace attn::train {
namespace {

using Kind = LrScheduleKind;

TEST(LrSchedule, ConstantWithAndWithoutWarmup) {
  LrSchedule plain({.kind = Kind::constant, .base_lr = 0.5f});
  EXPECT_FLOAT_EQ(plain.lr_at(0), 0.5f);
  EXPECT_FLOAT_EQ(plain.lr_at(1000000), 0.5f);
  LrSchedule warm({.kind = Kind::constant, .base_lr = 1.0f, .warmup_steps = 4});
  // s = step + 1: 1/4, 2/4, 3/4, 4/4, then flat
  EXPECT_FLOAT_EQ(warm.lr_at(0), 0.25f);
  EXPECT_FLOAT_EQ(warm.lr_at(2), 0.75f);
  EXPECT_FLOAT_EQ(warm.lr_at(3), 1.0f);
  EXPECT_FLOAT_EQ(warm.lr_at(50), 1.0f);
}

TEST(LrSchedule, LinearWarmupDecay) {
  LrSchedule s(
      {.kind = Kind::linear_warmup_decay, .base_lr = 1.0f, .warmup_steps = 2, .total_steps = 10, .min_lr = 0.2f});
  EXPECT_FLOAT_EQ(s.lr_at(0), 0.5f);
  EXPECT_FLOAT_EQ(s.lr_at(1), 1.0f);  // peak at s = w
  // s = 6: halfway from s = 2 to s = 10 -> 0.6
  EXPECT_FLOAT_EQ(s.lr_at(5), 0.6f);
  EXPECT_FLOAT_EQ(s.lr_at(9), 0.2f);  // the last of 10 steps uses min_lr
  EXPECT_FLOAT_EQ(s.lr_at(100), 0.2f);
  // Monotone non-increasing after warmup.
  for (int64_t t = 2; t < 20; ++t) EXPECT_LE(s.lr_at(t), s.lr_at(t - 1)) << t;
  LrSchedule no_warmup({.kind = Kind::linear_warmup_decay, .base_lr = 1.0f, .total_steps = 4});
  EXPECT_FLOAT_EQ(no_warmup.lr_at(0), 0.75f);
  EXPECT_FLOAT_EQ(no_warmup.lr_at(3), 0.0f);
}

TEST(LrSchedule, Cosine) {
  LrSchedule s({.kind = Kind::cosine, .base_lr = 2.0f, .warmup_steps = 10, .total_steps = 110, .min_lr = 0.0f});
  EXPECT_FLOAT_EQ(s.lr_at(4), 1.0f);
  EXPECT_FLOAT_EQ(s.lr_at(9), 2.0f);
  // s = 60: p = 0.5 -> half of base
  EXPECT_NEAR(s.lr_at(59), 1.0f, 1e-6f);
  // s = 35: p = 0.25 -> 2 · ½ (1 + cos(π/4))
  EXPECT_NEAR(s.lr_at(34), 1.0 + std::cos(std::numbers::pi / 4.0), 1e-6);
  EXPECT_NEAR(s.lr_at(109), 0.0f, 1e-7f);
  EXPECT_NEAR(s.lr_at(500), 0.0f, 1e-7f);
  LrSchedule floor({.kind = Kind::cosine, .base_lr = 1.0f, .total_steps = 10, .min_lr = 0.1f});
  EXPECT_FLOAT_EQ(floor.lr_at(9), 0.1f);
}

TEST(LrSchedule, InverseSqrtNoam) {
  LrSchedule s({.kind = Kind::inverse_sqrt, .base_lr = 1.0f, .warmup_steps = 4});
  EXPECT_FLOAT_EQ(s.lr_at(1), 0.5f);
  EXPECT_FLOAT_EQ(s.lr_at(3), 1.0f);
  // s = 16: √(4 / 16) = 0.5
  EXPECT_FLOAT_EQ(s.lr_at(15), 0.5f);
  EXPECT_FLOAT_EQ(s.lr_at(399), 0.1f);
  LrSchedule floored({.kind = Kind::inverse_sqrt, .base_lr = 1.0f, .warmup_steps = 4, .min_lr = 0.3f});
  EXPECT_FLOAT_EQ(floored.lr_at(399), 0.3f);
  LrSchedule no_warmup({.kind = Kind::inverse_sqrt, .base_lr = 1.0f});
  EXPECT_FLOAT_EQ(no_warmup.lr_at(0), 1.0f);
  EXPECT_FLOAT_EQ(no_warmup.lr_at(3), 0.5f);
}

TEST(LrSchedule, KindNames) {
  EXPECT_EQ(parse_lr_schedule_kind("cosine"), Kind::cosine);
  EXPECT_EQ(parse_lr_schedule_kind("noam"), Kind::inverse_sqrt);
  for (Kind k : {Kind::constant, Kind::linear_warmup_decay, Kind::cosine, Kind::inverse_sqrt})
    EXPECT_EQ(parse_lr_schedule_kind(lr_schedule_kind_name(k)), k);
  EXPECT_THROW_MSG(parse_lr_schedule_kind("step"), ValueError, "lr schedule: unknown kind 'step' (expected constant,");
}

TEST(LrSchedule, Validation) {
  EXPECT_THROW_MSG(LrSchedule({.base_lr = 0.0f}), ValueError, "base_lr must be finite and > 0, got 0");
  EXPECT_THROW_MSG(LrSchedule({.base_lr = NAN}), ValueError, "base_lr must be finite and > 0, got nan");
  EXPECT_THROW_MSG(LrSchedule({.base_lr = 1.0f, .min_lr = -0.1f}), ValueError,
                   "min_lr must be finite and >= 0, got -0.1");
  EXPECT_THROW_MSG(LrSchedule({.base_lr = 1.0f, .min_lr = 2.0f}), ValueError, "min_lr 2 is larger than base_lr 1");
  EXPECT_THROW_MSG(LrSchedule({.warmup_steps = -1}), ValueError, "warmup_steps must be >= 0, got -1");
  EXPECT_THROW_MSG(LrSchedule({.total_steps = -5}), ValueError, "total_steps must be >= 0, got -5");
  EXPECT_THROW_MSG(LrSchedule({.kind = Kind::cosine, .warmup_steps = 10, .total_steps = 10}), ValueError,
                   "cosine needs total_steps > warmup_steps, got total_steps 10 and warmup_steps 10");
  EXPECT_THROW_MSG(LrSchedule({.kind = Kind::linear_warmup_decay}), ValueError,
                   "linear_warmup_decay needs total_steps");
  EXPECT_THROW_MSG(LrSchedule().lr_at(-1), ValueError, "lr schedule: step must be >= 0, got -1");
}

}  // namespace
}  // namespace attn::train
