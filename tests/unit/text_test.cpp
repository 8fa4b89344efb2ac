// read_lines / write_lines: plain and gzip files, the last line without '\n', errors, atomic
// writes, and the UTF-8 repair of what is read.
#include "attn/data/text.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "attn/error.h"
#include "test_support.h"

namespace attn::data {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test, removed afterwards.
class TextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("attn_text_test_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  static void write_raw(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary);
    out << bytes;
  }
  static void write_gzip(const std::string& path, const std::string& bytes) {
    gzFile f = gzopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
    ASSERT_EQ(gzclose(f), Z_OK);
  }
  static std::string read_raw(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  fs::path dir_;
};

TEST_F(TextTest, ReadsPlainFile) {
  write_raw(path("a.txt"), "Zwei junge Männer.\nA dog runs.\n\nlast\n");
  EXPECT_EQ(read_lines(path("a.txt")), (std::vector<std::string>{"Zwei junge Männer.", "A dog runs.", "", "last"}));
}

TEST_F(TextTest, LastLineWithoutNewlineAndEmptyFile) {
  write_raw(path("a.txt"), "one\ntwo");
  EXPECT_EQ(read_lines(path("a.txt")), (std::vector<std::string>{"one", "two"}));
  write_raw(path("empty.txt"), "");
  EXPECT_TRUE(read_lines(path("empty.txt")).empty());
  write_raw(path("nl.txt"), "\n");
  EXPECT_EQ(read_lines(path("nl.txt")), (std::vector<std::string>{""}));
  // '\r' is data, not a line end.
  write_raw(path("crlf.txt"), "a\r\nb\r\n");
  EXPECT_EQ(read_lines(path("crlf.txt")), (std::vector<std::string>{"a\r", "b\r"}));
}

TEST_F(TextTest, ReadsGzipFile) {
  write_gzip(path("a.txt.gz"), "Zwei Hunde spielen.\nTwo dogs play.\nno newline");
  EXPECT_EQ(read_lines(path("a.txt.gz")),
            (std::vector<std::string>{"Zwei Hunde spielen.", "Two dogs play.", "no newline"}));
  // A longer stream than one read buffer (64 KiB) keeps every line intact.
  std::string big;
  std::vector<std::string> expected;
  for (int i = 0; i < 20000; ++i) {
    expected.push_back("line number " + std::to_string(i));
    big += expected.back() + "\n";
  }
  write_gzip(path("big.gz"), big);
  EXPECT_EQ(read_lines(path("big.gz")), expected);
}

TEST_F(TextTest, MissingAndCorruptFiles) {
  EXPECT_THROW_MSG(read_lines(path("nope.txt")), IoError, "nope.txt");
  // A gzip stream cut short is an error, not a silently shorter file.
  std::string big;
  for (int i = 0; i < 5000; ++i) big += "a line of some text number " + std::to_string(i) + "\n";
  write_gzip(path("full.gz"), big);
  const std::string bytes = read_raw(path("full.gz"));
  write_raw(path("cut.gz"), bytes.substr(0, bytes.size() / 2));
  EXPECT_THROW_MSG(read_lines(path("cut.gz")), IoError, "cut.gz");
  EXPECT_FALSE(file_exists(path("nope.txt")));
  EXPECT_TRUE(file_exists(path("full.gz")));
  EXPECT_FALSE(file_exists(dir_.string()));  // a directory is not a file
}

TEST_F(TextTest, WriteLinesRoundTripAndAtomic) {
  const std::vector<std::string> lines = {"erste Zeile", "", "third line"};
  write_lines(path("out.txt"), lines);
  EXPECT_EQ(read_raw(path("out.txt")), "erste Zeile\n\nthird line\n");
  EXPECT_EQ(read_lines(path("out.txt")), lines);
  EXPECT_FALSE(fs::exists(path("out.txt.tmp")));
  // Overwriting replaces the whole file.
  write_lines(path("out.txt"), {"x"});
  EXPECT_EQ(read_raw(path("out.txt")), "x\n");
  write_lines(path("out.txt"), {});
  EXPECT_EQ(read_raw(path("out.txt")), "");
}

TEST_F(TextTest, WriteLinesFailureLeavesNothing) {
  EXPECT_THROW_MSG(write_lines(path("no_dir/out.txt"), {"a"}), IoError, "no_dir/out.txt");
  EXPECT_FALSE(fs::exists(path("no_dir")));
  // The target is a directory: refused, nothing is written beside it.
  fs::create_directories(path("target"));
  EXPECT_THROW_MSG(write_lines(path("target"), {"a"}), IoError, path("target") + ": is a directory, not a file");
  EXPECT_TRUE(fs::is_directory(path("target")));
  EXPECT_TRUE(fs::is_empty(path("target")));
}

const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD

TEST(Utf8, ValidTextIsUnchanged) {
  const std::string text = "a \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF";  // a é € 😀 U+10FFFF
  EXPECT_EQ(valid_utf8(text), text);
  EXPECT_EQ(utf8_length_at(text, 2), 2u);
  EXPECT_EQ(utf8_length_at(text, 5), 3u);
  EXPECT_EQ(utf8_length_at(text, 9), 4u);
}

// What JSON (and Python's strict decoder) refuse, one U+FFFD per byte that starts no valid sequence.
TEST(Utf8, InvalidBytesBecomeReplacementCharacters) {
  const std::string R = kReplacement;
  EXPECT_EQ(valid_utf8("good \xFF movie"), "good " + R + " movie");
  EXPECT_EQ(valid_utf8("\xC0\xAF"), R + R);                  // overlong '/'
  EXPECT_EQ(valid_utf8("\xE0\x80\xAF"), R + R + R);          // overlong, 3 bytes
  EXPECT_EQ(valid_utf8("\xED\xA0\x80"), R + R + R);          // a surrogate
  EXPECT_EQ(valid_utf8("\xF4\x90\x80\x80"), R + R + R + R);  // past U+10FFFF
  EXPECT_EQ(valid_utf8("a\xC3"), "a" + R);                   // truncated at the end
  EXPECT_EQ(valid_utf8("\xC3x"), R + "x");                   // a lead byte without its continuation
  EXPECT_EQ(valid_utf8("\x80"), R);                          // a lone continuation byte
  EXPECT_EQ(utf8_length_at("\xC0\xAF", 0), 0u);
}

TEST_F(TextTest, ReadLinesRepairsInvalidUtf8) {
  write_gzip(path("bad.gz"), "ok \xC3\xA9\nbad \xFF\xC0\xAF\n");
  EXPECT_EQ(read_lines(path("bad.gz")),
            (std::vector<std::string>{"ok \xC3\xA9", "bad " + kReplacement + kReplacement + kReplacement}));
}

}  // namespace
}  // namespace attn::data
