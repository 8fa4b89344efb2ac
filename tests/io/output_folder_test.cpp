// io::check_output_folder and io::NewFolder (include/attn/io/output_folder.h): a folder
// attn writes into is checked before any work, and a set of files appears as a unit.
#include "attn/io/output_folder.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "attn/error.h"
#include "attn/io/atomic_file.h"

namespace fs = std::filesystem;

namespace {

struct Scratch {
  fs::path dir;
  Scratch() {
    std::string pattern = (fs::temp_directory_path() / "attn-output-folder-XXXXXX").string();
    dir = ::mkdtemp(pattern.data());
  }
  ~Scratch() { fs::remove_all(dir); }
};

std::string message_of(const std::string& path) {
  try {
    attn::io::check_output_folder(path, "--out");
  } catch (const attn::IoError& e) {
    return e.what();
  }
  return "";
}

// Every entry of `dir` whose name starts with `prefix`.
int count_starting(const fs::path& dir, const std::string& prefix) {
  int n = 0;
  for (const auto& entry : fs::directory_iterator(dir)) n += entry.path().filename().string().rfind(prefix, 0) == 0;
  return n;
}

}  // namespace

TEST(OutputFolder, RefusesWhatCannotBeAFolder) {
  Scratch s;
  std::ofstream(s.dir / "notes.txt") << "mine";
  fs::create_symlink(s.dir / "gone", s.dir / "dangling");
  fs::create_directory(s.dir / "folder");
  fs::create_symlink(s.dir / "folder", s.dir / "link");
  EXPECT_EQ(message_of((s.dir / "folder").string()), "");
  EXPECT_EQ(message_of((s.dir / "link").string()), "");
  EXPECT_EQ(message_of((s.dir / "new/deeper").string()), "");
  EXPECT_NE(message_of((s.dir / "notes.txt").string()).find("notes.txt: a file, not a folder"), std::string::npos);
  EXPECT_NE(message_of("/dev/null").find("/dev/null: a character device, not a folder"), std::string::npos);
  EXPECT_NE(message_of((s.dir / "dangling").string())
                .find("a symbolic link to '" + (s.dir / "gone").string() + "', which does not exist"),
            std::string::npos);
  EXPECT_NE(message_of((s.dir / "notes.txt/run").string())
                .find("cannot make it: " + (s.dir / "notes.txt").string() + " is a file"),
            std::string::npos);
  // Nothing was made or changed.
  EXPECT_FALSE(fs::exists(s.dir / "new"));
  EXPECT_TRUE(fs::is_regular_file(s.dir / "notes.txt"));
}

TEST(OutputFolder, NewFolderAppearsWholeOnCommit) {
  Scratch s;
  const fs::path out = s.dir / "export";
  {
    attn::io::NewFolder folder(out.string(), "--out");
    attn::io::write_file_atomically(folder.file("a.txt"), "a");
    attn::io::write_file_atomically(folder.file("b.txt"), "b");
    EXPECT_FALSE(fs::exists(out)) << "the folder appeared before commit()";
    folder.commit();
  }
  EXPECT_TRUE(fs::is_regular_file(out / "a.txt"));
  EXPECT_TRUE(fs::is_regular_file(out / "b.txt"));
  EXPECT_EQ(count_starting(s.dir, ".export.tmp-"), 0);
  struct stat st {};
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0777 & ~mask) << "the folder kept mkdtemp's 0700";
}

TEST(OutputFolder, NewFolderWithoutCommitLeavesNothing) {
  Scratch s;
  const fs::path out = s.dir / "export";
  try {
    attn::io::NewFolder folder(out.string(), "--out");
    attn::io::write_file_atomically(folder.file("a.txt"), "a");
    throw attn::IoError("the second file failed");
  } catch (const attn::IoError&) {
  }
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(count_starting(s.dir, ".export.tmp-"), 0);
}

TEST(OutputFolder, NewFolderReplacesOnlyAnEmptyFolder) {
  Scratch s;
  fs::create_directory(s.dir / "empty");
  {
    attn::io::NewFolder folder((s.dir / "empty").string(), "--out");
    attn::io::write_file_atomically(folder.file("a.txt"), "a");
    folder.commit();
  }
  EXPECT_TRUE(fs::is_regular_file(s.dir / "empty/a.txt"));
  try {
    attn::io::NewFolder folder((s.dir / "empty").string(), "--out");
    FAIL() << "a folder holding files was accepted";
  } catch (const attn::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("exists and is not empty"), std::string::npos) << e.what();
  }
}
