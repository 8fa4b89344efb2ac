// Issue 34, defects 3 and 4: what attn reads is a regular file of bounded size (a log.jsonl
// that was a FIFO hung `attn view --run`, one linked to /dev/zero was read until memory ran
// out), and no output replaces an input (`view --model M --out M` replaced the checkpoint
// with HTML), compared by device and inode, so a hard link or another spelling of the path
// is caught too.
#include "attn/io/input_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "attn/io/atomic_file.h"
#include "test_support.h"

namespace attn::io {
namespace {

namespace fs = std::filesystem;

class InputFileTest : public attn::testing::TempDirTest {
 protected:
  void TearDown() override {
    refuse_outputs_over_inputs(false);  // the process-wide switch, off as the library starts
    TempDirTest::TearDown();
  }
};

TEST_F(InputFileTest, ReadRegularFileRefusesSpecialFilesAndBoundsTheSize) {
  put(path("log.jsonl"), "{\"step\": 1}\n");
  EXPECT_EQ(read_regular_file(path("log.jsonl"), 100), "{\"step\": 1}\n");
  EXPECT_THROW_MSG(read_regular_file(path("log.jsonl"), 5), IoError, "log.jsonl: is 12 bytes, more than the 5");
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  EXPECT_THROW_MSG(read_regular_file(path("fifo"), 100), IoError, "fifo: not a regular file (a FIFO)");
  fs::create_symlink("/dev/zero", path("zero"));
  EXPECT_THROW_MSG(read_regular_file(path("zero"), 100), IoError, "zero: not a regular file (a character device)");
  fs::create_directory(path("folder"));
  EXPECT_THROW_MSG(read_regular_file(path("folder"), 100), IoError, "folder: not a regular file (a directory)");
}

TEST_F(InputFileTest, AnOutputNamingAnInputIsRefused) {
  put(path("model.safetensors"), "weights");
  put(path("other"), "x");
  ASSERT_EQ(::link(path("model.safetensors").c_str(), path("hard").c_str()), 0);
  ::close(open_regular_file(path("model.safetensors")));
  EXPECT_THROW_MSG(check_not_an_input(path("model.safetensors"), "--out"), ValueError,
                   "--out " + path("model.safetensors") + ": is also an input of this command");
  // Another spelling, a symlink and a hard link name the same file.
  EXPECT_THROW(check_not_an_input((dir_ / "." / "model.safetensors").string(), "--out"), ValueError);
  fs::create_symlink(path("model.safetensors"), path("link"));
  EXPECT_THROW(check_not_an_input(path("link"), "--json"), ValueError);
  EXPECT_THROW(check_not_an_input(path("hard"), "--hypotheses"), ValueError);
  // Files not read, and paths that do not exist yet, are fine.
  EXPECT_NO_THROW(check_not_an_input(path("other"), "--out"));
  EXPECT_NO_THROW(check_not_an_input(path("new.html"), "--out"));
  // An input deleted since: a new file that gets its inode is not the input.
  put(path("gone"), "read once");
  ::close(open_regular_file(path("gone")));
  struct stat before {};
  ASSERT_EQ(::stat(path("gone").c_str(), &before), 0);
  fs::remove(path("gone"));
  for (int i = 0; i < 50; ++i) {
    put(path("new" + std::to_string(i)), "fresh");
    struct stat st {};
    ASSERT_EQ(::stat(path("new" + std::to_string(i)).c_str(), &st), 0);
    if (st.st_ino == before.st_ino) EXPECT_NO_THROW(check_not_an_input(path("new" + std::to_string(i)), "--out"));
  }
}

TEST_F(InputFileTest, AtomicFileRefusesAnInputOnceAsked) {
  put(path("spm.model"), "tokenizer");
  ::close(open_regular_file(path("spm.model")));
  write_file_atomically(path("spm.model"), "rewritten");  // the library's default: allowed (attn.save)
  EXPECT_EQ(read(path("spm.model")), "rewritten");
  ::close(open_regular_file(path("spm.model")));  // (the rename made it a new file)
  refuse_outputs_over_inputs();
  EXPECT_THROW_MSG(write_file_atomically(path("spm.model"), "hypotheses"), ValueError, "is also an input");
  EXPECT_EQ(read(path("spm.model")), "rewritten");  // untouched
  EXPECT_NO_THROW(write_file_atomically(path("out.txt"), "fine"));
  EXPECT_EQ(read(path("out.txt")), "fine");
}

}  // namespace
}  // namespace attn::io
