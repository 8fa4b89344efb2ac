// Issue 18: the old writers replaced /dev/null and /dev/full with regular files (as root),
// replaced symlinks instead of writing through them, used a fixed "X.tmp" that destroyed
// a user's own file of that name, and some never fsync'ed.
#include "attn/io/atomic_file.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "attn/data/text.h"
#include "attn/io/safetensors.h"
#include "test_support.h"

namespace attn::io {
namespace {

namespace fs = std::filesystem;

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "attn_atomic_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string read(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static void put(const std::string& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  fs::path dir_;
};

TEST_F(AtomicFileTest, WritesAndReplacesARegularFile) {
  write_file_atomically(path("a.txt"), "first");
  EXPECT_EQ(read(path("a.txt")), "first");
  ::chmod(path("a.txt").c_str(), 0640);
  write_file_atomically(path("a.txt"), "second");
  EXPECT_EQ(read(path("a.txt")), "second");
  struct stat st;
  ASSERT_EQ(::stat(path("a.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u) << "the replaced file's permissions are kept";
  EXPECT_EQ(listing(), std::vector<std::string>{"a.txt"});
}

TEST_F(AtomicFileTest, NeverTouchesTheUsersOwnTmpFile) {
  put(path("out.txt.tmp"), "mine");
  write_file_atomically(path("out.txt"), "new");
  data::write_lines(path("out.txt"), {"a", "b"});
  save_safetensors(path("out.txt"), {{"x", Tensor::zeros({2})}});
  EXPECT_EQ(read(path("out.txt.tmp")), "mine");
  EXPECT_EQ(listing(), (std::vector<std::string>{"out.txt", "out.txt.tmp"}));
}

TEST_F(AtomicFileTest, WritesThroughASymlinkChain) {
  fs::create_directory(path("real"));
  put(path("real/target.txt"), "old");
  fs::create_symlink("real/target.txt", path("link1"));
  fs::create_symlink(path("link1"), path("link2"));
  write_file_atomically(path("link2"), "through");
  EXPECT_TRUE(fs::is_symlink(path("link1")));
  EXPECT_TRUE(fs::is_symlink(path("link2")));
  EXPECT_EQ(read(path("real/target.txt")), "through");
  // A dangling link creates the file it names.
  fs::create_symlink("real/new.txt", path("dangling"));
  data::write_lines(path("dangling"), {"x"});
  EXPECT_TRUE(fs::is_symlink(path("dangling")));
  EXPECT_EQ(read(path("real/new.txt")), "x\n");
  // A loop is an error, not a hang.
  fs::create_symlink(path("loop_b"), path("loop_a"));
  fs::create_symlink(path("loop_a"), path("loop_b"));
  EXPECT_THROW_MSG(write_file_atomically(path("loop_a"), "x"), IoError, "too many levels of symbolic links");
}

TEST_F(AtomicFileTest, DevicesAreWrittenInPlaceNeverReplaced) {
  // As root, rename() over /dev/null would have replaced the device with a regular file.
  write_file_atomically("/dev/null", "discarded");
  data::write_lines("/dev/null", {"a"});
  save_safetensors("/dev/null", {{"x", Tensor::zeros({4})}});
  struct stat st;
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/null is no longer a character device";
  if (::access("/dev/full", W_OK) == 0) {
    EXPECT_THROW_MSG(write_file_atomically("/dev/full", "x"), IoError,
                     "/dev/full: cannot write: No space left on device");
    EXPECT_THROW_MSG(data::write_lines("/dev/full", {"a"}), IoError, "No space left on device");
    ASSERT_EQ(::stat("/dev/full", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/full is no longer a character device";
  }
  // No temporary file was left in /dev either.
  for (const auto& e : fs::directory_iterator("/dev"))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
}

TEST_F(AtomicFileTest, AFifoIsWrittenInPlace) {
  ASSERT_EQ(::mkfifo(path("pipe").c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = read(path("pipe")); });
  write_file_atomically(path("pipe"), "through the pipe");
  reader.join();
  EXPECT_EQ(got, "through the pipe");
  struct stat st;
  ASSERT_EQ(::lstat(path("pipe").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST_F(AtomicFileTest, RefusesADirectory) {
  fs::create_directory(path("d"));
  EXPECT_THROW_MSG(write_file_atomically(path("d"), "x"), IoError, path("d") + ": is a directory, not a file");
  EXPECT_TRUE(fs::is_empty(path("d")));
  EXPECT_EQ(listing(), std::vector<std::string>{"d"});
}

TEST_F(AtomicFileTest, MissingFolderIsOneLine) {
  EXPECT_THROW_MSG(write_file_atomically(path("no/such/f.txt"), "x"), IoError,
                   path("no/such/f.txt") + ": cannot create a temporary file in '" + path("no/such") +
                       "': No such file or directory");
}

TEST_F(AtomicFileTest, FailureLeavesTheOldFileIntact) {
  put(path("keep.txt"), "old contents");
  {
    AtomicFile file(path("keep.txt"));
    file.write("half of the new");
    // Destroyed without commit(): as when a writer throws part-way.
  }
  EXPECT_EQ(read(path("keep.txt")), "old contents");
  EXPECT_EQ(listing(), std::vector<std::string>{"keep.txt"});
  // A write that fails part-way (RLIMIT_FSIZE: EFBIG).
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto* previous = ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = saved;
  small.rlim_cur = 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string message;
  try {
    write_file_atomically(path("keep.txt"), std::string(100000, 'x'));
  } catch (const IoError& e) {
    message = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  ::signal(SIGXFSZ, previous);
  EXPECT_NE(message.find(path("keep.txt") + ": cannot write: File too large"), std::string::npos) << message;
  EXPECT_EQ(read(path("keep.txt")), "old contents");
  EXPECT_EQ(listing(), std::vector<std::string>{"keep.txt"});
}

TEST_F(AtomicFileTest, CopyRefusesAFifoSource) {
  ASSERT_EQ(::mkfifo(path("pipe").c_str(), 0600), 0);
  EXPECT_THROW_MSG(copy_file_atomically(path("pipe"), path("out")), IoError, path("pipe") + ": not a regular file");
  put(path("src"), "bytes");
  copy_file_atomically(path("src"), path("out"));
  EXPECT_EQ(read(path("out")), "bytes");
}

}  // namespace
}  // namespace attn::io
