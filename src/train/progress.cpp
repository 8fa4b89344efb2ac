#include "attn/train/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "attn/error.h"

namespace attn::train {

namespace {

constexpr int kBarWidth = 20;
constexpr double kMinRedrawSeconds = 0.1;  // at most ~10 redraws a second

}  // namespace

Progress::Progress(std::string label, int64_t total_steps, std::FILE* out, ProgressStyle style)
    : label_(std::move(label)), total_(total_steps), out_(out) {
  if (total_steps < 1) throw ValueError(fmt::format("progress: total steps {} must be at least 1", total_steps));
  switch (style) {
    case ProgressStyle::bar:
      bar_ = true;
      break;
    case ProgressStyle::lines:
      bar_ = false;
      break;
    case ProgressStyle::automatic: {
      const int fd = out_ != nullptr ? ::fileno(out_) : -1;
      bar_ = fd >= 0 && ::isatty(fd) == 1;
      break;
    }
  }
  interval_ = std::max<int64_t>(1, total_ / 20);
  start_ = std::chrono::steady_clock::now();
  last_draw_ = start_;
}

Progress::~Progress() {
  // An unfinished bar (an exception unwound past the loop) still gets its line ended, so
  // the next message does not land on top of it.
  if (bar_ && drawn_ && !finished_) write("\n");
}

double Progress::seconds_since_start() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string Progress::format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const int64_t s = static_cast<int64_t>(std::llround(seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

std::string Progress::format_value(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (std::fabs(value) >= 100.0) return fmt::format("{:.0f}", value);
  return fmt::format("{:.3g}", value);
}

std::string Progress::render(bool with_bar, double elapsed) const {
  std::string line = label_;
  if (with_bar) {
    const double fraction = std::clamp(static_cast<double>(step_) / static_cast<double>(total_), 0.0, 1.0);
    const int filled = static_cast<int>(fraction * kBarWidth);
    line += " [";
    line.append(static_cast<size_t>(filled), '#');
    line.append(static_cast<size_t>(kBarWidth - filled), '.');
    line += "]";
  }
  line += fmt::format(" {}/{}", step_, total_);
  for (const auto& [name, value] : fields_) line += fmt::format(" {} {}", name, format_value(value));
  if (!with_bar) line += " elapsed " + format_duration(elapsed);
  if (step_ < total_) {
    // Rate since the first update (a resumed run starts above step 0).
    const int64_t done = step_ - first_step_;
    const double dt = elapsed - first_time_;
    if (have_first_ && done > 0 && dt > 0) {
      line += " ETA " + format_duration(static_cast<double>(total_ - step_) * dt / static_cast<double>(done));
    } else {
      line += " ETA ?";
    }
  } else if (with_bar) {
    line += " in " + format_duration(elapsed);
  }
  return line;
}

void Progress::write(const std::string& text) {
  if (out_ == nullptr) return;
  // Errors are deliberately ignored: progress output must never stop the work.
  std::fwrite(text.data(), 1, text.size(), out_);
  std::fflush(out_);
}

void Progress::update(int64_t step, const Fields& fields) {
  try {
    if (finished_) return;
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    if (!have_first_) {
      have_first_ = true;
      first_step_ = step;
      first_time_ = elapsed;
    }
    step_ = step;
    fields_ = fields;
    if (bar_) {
      const double since_draw = std::chrono::duration<double>(now - last_draw_).count();
      if (drawn_ && since_draw < kMinRedrawSeconds && step_ < total_) return;
      std::string line = render(true, elapsed);
      const size_t width = line.size();
      if (width < last_width_) line.append(last_width_ - width, ' ');
      last_width_ = width;
      write("\r" + line);
      drawn_ = true;
      last_draw_ = now;
    } else {
      if (step_ == last_logged_step_) return;
      if (step_ % interval_ != 0 && step_ < total_) return;
      write(render(false, elapsed) + "\n");
      last_logged_step_ = step_;
    }
  } catch (...) {
    // Never let progress reporting throw (e.g. bad_alloc while formatting).
  }
}

void Progress::finish() {
  try {
    if (finished_) return;
    finished_ = true;
    const double elapsed = seconds_since_start();
    if (bar_) {
      std::string line = render(true, elapsed);
      const size_t width = line.size();
      if (width < last_width_) line.append(last_width_ - width, ' ');
      write("\r" + line + "\n");
    } else if (step_ != last_logged_step_ || !have_first_) {
      write(render(false, elapsed) + "\n");
      last_logged_step_ = step_;
    }
  } catch (...) {
  }
}

}  // namespace attn::train
