// Issue 34, defect 8: a log.jsonl whose last line was cut short (a kill or a full disk during
// a write) and then resumed got the resumed session's first record glued onto the partial
// line, and `attn view --run` refused the whole run. The writer now starts a fresh line, and
// the reader skips a damaged last line (or one just before a session's first record) with a
// warning; a damaged line anywhere else is still an error naming it.
#include "attn/train/run_log.h"

#include "test_support.h"

namespace attn::train {
namespace {

class RunLogTest : public attn::testing::TempDirTest {
 protected:
  void put(const std::string& text) const { TempDirTest::put(log_path(), text); }
  std::string read() const { return TempDirTest::read(log_path()); }
  std::string log_path() const { return path("log.jsonl"); }
};

TEST_F(RunLogTest, ResumeAfterAPartialLineStartsAFreshLine) {
  put("{\"run\": {}, \"step\": 0, \"resume\": false}\n{\"step\": 5, \"loss\": 1.5}\n{\"step\": 10, \"lo");
  {
    JsonlLog log(log_path(), /*append=*/true);
    log.write({{"run", nlohmann::json::object()}, {"step", 10}, {"resume", true}});
    log.write({{"step", 15}, {"loss", 1.25}});
  }
  EXPECT_EQ(read(),
            "{\"run\": {}, \"step\": 0, \"resume\": false}\n{\"step\": 5, \"loss\": 1.5}\n{\"step\": 10, \"lo\n"
            "{\"resume\":true,\"run\":{},\"step\":10}\n{\"loss\":1.25,\"step\":15}\n");
  const RunLogRecords read_back = read_run_log(log_path());
  ASSERT_EQ(read_back.records.size(), 4u);  // the partial line skipped, every other record kept
  EXPECT_EQ(read_back.records[3]["step"], 15);
  ASSERT_EQ(read_back.warnings.size(), 1u);
  EXPECT_NE(read_back.warnings[0].find("log.jsonl: line 3 is not valid JSON: "), std::string::npos)
      << read_back.warnings[0];
  // A whole log resumed gets no extra blank line.
  put("{\"step\": 1}\n");
  JsonlLog(log_path(), true).write({{"step", 2}});
  EXPECT_EQ(read(), "{\"step\": 1}\n{\"step\":2}\n");
}

TEST_F(RunLogTest, ADamagedLastLineIsSkippedWithAWarning) {
  put("{\"step\": 5}\n\n{\"step\": 10, \"lo");
  RunLogRecords r = read_run_log(log_path());
  EXPECT_EQ(r.records.size(), 1u);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("log.jsonl: line 3 is not valid JSON: "), std::string::npos) << r.warnings[0];
  // Nested 100,000 deep on the last line: skipped too, never parsed into a value that deep.
  put("{\"step\": 5}\n" + std::string(100000, '[') + std::string(100000, ']') + "\n");
  r = read_run_log(log_path());
  EXPECT_EQ(r.records.size(), 1u);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("line 2 nests deeper than 64 levels; skipped (the last line"), std::string::npos)
      << r.warnings[0];
}

TEST_F(RunLogTest, ADamagedLineInTheMiddleIsAnError) {
  put("{\"step\": 5}\n[1, 2]\n{\"step\": 10}\n");
  EXPECT_THROW_MSG(read_run_log(log_path()), IoError, "log.jsonl: line 2 is not a JSON object");
  put("{\"step\": 5}\n" + std::string(100000, '[') + "\n{\"step\": 10}\n");
  EXPECT_THROW_MSG(read_run_log(log_path()), IoError, "log.jsonl: line 2 nests deeper than 64 levels");
}

}  // namespace
}  // namespace attn::train
