#include "attn/train/progress.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "test_support.h"

namespace attn::train {
namespace {

// Everything written to a tmpfile so far.
std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  std::fseek(f, 0, SEEK_END);
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

TEST(Progress, NonTerminalWritesPeriodicLines) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Progress progress("train", 100, f);  // a tmpfile is not a terminal: line mode
    EXPECT_FALSE(progress.is_bar());
    for (int step = 1; step <= 100; ++step) {
      progress.update(step, {{"loss", 1.2345}, {"acc", 0.45}, {"tok/s", 12000.4}});
    }
    progress.finish();
  }
  const std::string text = contents(f);
  std::fclose(f);
  const auto lines = lines_of(text);
  // max(1, 100 / 20) = every 5 steps: 20 lines, the last at step 100; no duplicate at finish.
  ASSERT_EQ(lines.size(), 20u) << text;
  EXPECT_EQ(lines[0].rfind("train 5/100 loss 1.23 acc 0.45 tok/s 12000 elapsed ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(" ETA "), std::string::npos) << lines[0];
  EXPECT_EQ(lines[1].rfind("train 10/100 ", 0), 0u) << lines[1];
  EXPECT_EQ(lines[19].rfind("train 100/100 loss 1.23", 0), 0u) << lines[19];
  EXPECT_EQ(lines[19].find(" ETA "), std::string::npos) << "no ETA once done: " << lines[19];
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(text.find('['), std::string::npos);
}

TEST(Progress, FinishLogsTheLastStepOnce) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Progress progress("eval", 7, f, ProgressStyle::lines);  // interval max(1, 7/20) = 1
    progress.update(1, {{"loss", 2.0}});
    progress.update(1, {{"loss", 2.0}});  // the same step again: no second line
    progress.update(3, {{"loss", 1.5}});
    progress.finish();                    // stopped early (e.g. Ctrl-C): one final line
    progress.finish();                    // idempotent
    progress.update(4, {{"loss", 1.0}});  // after finish: ignored
  }
  const auto lines = lines_of(contents(f));
  std::fclose(f);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("eval 1/7 loss 2 elapsed", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("eval 3/7 loss 1.5 elapsed", 0), 0u) << lines[1];
}

TEST(Progress, FinishWithoutUpdates) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Progress progress("sweep", 3, f, ProgressStyle::lines);
    progress.finish();
  }
  const auto lines = lines_of(contents(f));
  std::fclose(f);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("sweep 0/3 elapsed 0s ETA ?", 0), 0u) << lines[0];
}

TEST(Progress, BarRedrawsInPlace) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Progress progress("train", 1500, f, ProgressStyle::bar);
    EXPECT_TRUE(progress.is_bar());
    progress.update(120, {{"loss", 1.23}, {"acc", 0.45}});
    for (int step = 121; step < 1500; ++step) progress.update(step, {{"loss", 1.0}});  // throttled
    progress.update(1500, {{"loss", 0.5}});                                            // the last step is always drawn
    progress.finish();
  }
  const std::string text = contents(f);
  std::fclose(f);
  EXPECT_EQ(text.rfind("\rtrain [#...................] 120/1500 loss 1.23 acc 0.45 ETA ?", 0), 0u) << text;
  // Throttled to ~10 redraws a second: far fewer draws than the 1381 updates.
  size_t draws = 0;
  for (char ch : text) draws += ch == '\r';
  EXPECT_LE(draws, 10u) << text;
  EXPECT_GE(draws, 3u) << text;  // first, last step, finish
  EXPECT_NE(text.find("\rtrain [####################] 1500/1500 loss 0.5 in "), std::string::npos) << text;
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
}

TEST(Progress, FormatsDurationsAndValues) {
  EXPECT_EQ(Progress::format_duration(0.2), "0s");
  EXPECT_EQ(Progress::format_duration(45), "45s");
  EXPECT_EQ(Progress::format_duration(80), "1m20s");
  EXPECT_EQ(Progress::format_duration(3600 * 2 + 180), "2h03m");
  EXPECT_EQ(Progress::format_duration(-1), "?");
  EXPECT_EQ(Progress::format_value(1.2345), "1.23");
  EXPECT_EQ(Progress::format_value(0.45), "0.45");
  EXPECT_EQ(Progress::format_value(12000.4), "12000");
  EXPECT_EQ(Progress::format_value(0.000123), "0.000123");
  EXPECT_EQ(Progress::format_value(std::nan("")), "nan");
}

TEST(Progress, NeverThrowsOnBrokenOutput) {
  // A read-only stream: every write fails.
  std::FILE* f = std::fopen("/dev/null", "r");
  ASSERT_NE(f, nullptr);
  {
    Progress lines("x", 10, f, ProgressStyle::lines);
    Progress bar("y", 10, f, ProgressStyle::bar);
    for (int s = 1; s <= 10; ++s) {
      EXPECT_NO_THROW(lines.update(s, {{"loss", 1.0}}));
      EXPECT_NO_THROW(bar.update(s, {{"loss", 1.0}}));
    }
    EXPECT_NO_THROW(lines.finish());
  }  // bar's destructor ends its line: must not throw either
  std::fclose(f);
  Progress silent("z", 5, nullptr);
  EXPECT_NO_THROW(silent.update(5, {}));
  EXPECT_NO_THROW(silent.finish());
  EXPECT_THROW_MSG(Progress("w", 0, nullptr), ValueError, "progress: total steps 0 must be at least 1");
}

}  // namespace
}  // namespace attn::train
