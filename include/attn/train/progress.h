#pragma once
// Progress of long work (training, evaluation, sweeps). On a terminal: a one-line bar
// redrawn in place with '\r', at most about ten times a second:
//   train [#########...........] 120/1500 loss 1.23 acc 0.45 tok/s 12000 ETA 1m20s
// Otherwise (a log file, a pipe, CI): a plain line every max(1, total/20) steps and at the
// end:
//   train 120/1500 loss 1.23 acc 0.45 tok/s 12000 elapsed 12s ETA 1m20s
// Progress never throws on I/O errors: a full disk or a closed stream only loses lines.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace attn::train {

enum class ProgressStyle {
  automatic,  // bar when `out` is a terminal (isatty), lines otherwise
  bar,        // always the redrawn bar
  lines,      // always plain log lines
};

class Progress {
 public:
  using Fields = std::vector<std::pair<std::string, double>>;

  // total_steps < 1 throws ValueError. `out` may be null (prints nothing); it is not owned.
  Progress(std::string label, int64_t total_steps, std::FILE* out = stderr,
           ProgressStyle style = ProgressStyle::automatic);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Reports that `step` steps (of total_steps) are done, with named values such as
  // {"loss", 1.23}, {"acc", 0.45}, {"tok/s", 12000}. Steps may start above 0 (a resumed
  // run): the ETA uses the rate since the first update.
  void update(int64_t step, const Fields& fields);
  // Ends the display: the bar gets its final state and a newline; in line mode a final
  // line is written unless the last step was already logged. Idempotent.
  void finish();

  bool is_bar() const { return bar_; }

  // "45s", "1m20s", "2h03m"; "?" for a negative or non-finite duration.
  static std::string format_duration(double seconds);
  // Compact number: "1.23", "0.45", "12000", "nan".
  static std::string format_value(double value);

 private:
  std::string render(bool with_bar, double elapsed) const;
  void write(const std::string& text);
  double seconds_since_start() const;

  std::string label_;
  int64_t total_;
  std::FILE* out_;
  bool bar_ = false;
  int64_t interval_ = 1;  // line mode: log every `interval_` steps

  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  bool drawn_ = false;
  bool finished_ = false;
  bool have_first_ = false;
  int64_t first_step_ = 0;   // step at the first update (rate baseline)
  double first_time_ = 0.0;  // seconds at the first update
  int64_t step_ = 0;
  int64_t last_logged_step_ = -1;
  Fields fields_;
  size_t last_width_ = 0;  // bar mode: characters of the previous draw, to blank leftovers
};

}  // namespace attn::train
