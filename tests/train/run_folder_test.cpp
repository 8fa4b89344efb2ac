// The run folder (train/run.h: lock_run_folder) and the seq2seq trainer's size checks:
// --overwrite keeps the old run until the new one has saved a model, --resume into a missing
// folder makes nothing, and products of user-given sizes are checked before any allocation.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "attn/error.h"
#include "attn/train/run.h"
#include "attn/train/seq2seq_trainer.h"

namespace attn::train {
namespace {
namespace fs = std::filesystem;

std::string fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("attn_run_folder_test_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  return dir.string();
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

int replaced_folders(const fs::path& dir) {
  int n = 0;
  for (const auto& entry : fs::directory_iterator(dir))
    n += entry.path().filename().string().rfind(".attn-replaced-", 0) == 0;
  return n;
}

// A folder holding an "old run": each file holds its own name.
std::string old_run(const std::string& name) {
  const std::string dir = fresh_dir(name);
  fs::create_directories(dir);
  for (const char* file : {"model.safetensors", "last.safetensors", "log.jsonl", "config.toml", "spm.model"})
    std::ofstream(fs::path(dir) / file) << "old " << file;
  return dir;
}

TEST(RunFolder, OverwriteRestoresTheOldRunWhenTheNewOneSavesNothing) {
  const std::string dir = old_run("restore");
  RunOptions o;
  o.out_dir = dir;
  o.overwrite = true;
  {
    const auto lock = lock_run_folder(o);
    EXPECT_FALSE(fs::exists(fs::path(dir) / "model.safetensors")) << "the old run stayed beside the new one";
    std::ofstream(fs::path(dir) / "spm.vocab") << "new";  // the new run wrote a file, then failed
    std::ofstream(fs::path(dir) / "log.jsonl") << "new";
  }
  for (const char* file : {"model.safetensors", "last.safetensors", "log.jsonl", "config.toml", "spm.model"})
    EXPECT_EQ(read(fs::path(dir) / file), std::string("old ") + file) << file;
  EXPECT_FALSE(fs::exists(fs::path(dir) / "spm.vocab")) << "the failed run's file stayed";
  EXPECT_EQ(replaced_folders(dir), 0);
  fs::remove_all(dir);
}

TEST(RunFolder, OverwriteDropsTheOldRunOnceTheNewOneSaved) {
  const std::string dir = old_run("keep");
  RunOptions o;
  o.out_dir = dir;
  o.overwrite = true;
  {
    const auto lock = lock_run_folder(o);
    std::ofstream(fs::path(dir) / "model.safetensors") << "new";
    keep_new_run(lock);
  }
  EXPECT_EQ(read(fs::path(dir) / "model.safetensors"), "new");
  for (const char* file : {"last.safetensors", "log.jsonl", "config.toml", "spm.model"})
    EXPECT_FALSE(fs::exists(fs::path(dir) / file)) << file << " of the old run stayed";
  EXPECT_EQ(replaced_folders(dir), 0);
  fs::remove_all(dir);
}

TEST(RunFolder, ResumeIntoAMissingFolderMakesNothing) {
  RunOptions o;
  o.out_dir = fresh_dir("missing");
  o.resume = true;
  EXPECT_THROW(lock_run_folder(o), IoError);
  EXPECT_FALSE(fs::exists(o.out_dir));
}

TEST(Seq2SeqSizes, ProductsOfOptionsAreCheckedBeforeAllocating) {
  models::Seq2SeqConfig config;
  TrainOptions o;
  o.out_dir = fresh_dir("unused");
  o.batch = 4096;
  o.bucket = 1048577;  // 4096 x 1048577 wrapped to 4096 in int: batches were cut past the pool's end
  try {
    o.validate();
    FAIL() << "a pool of 4,294,971,392 sources was accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("--bucket 1048577 x --batch 4096: more than 2147483647 sources"),
              std::string::npos)
        << e.what();
  }
  o.batch = 64;
  o.bucket = 33554433;  // wrapped to a negative batch size
  EXPECT_THROW(o.validate(), ValueError);
  o.bucket = 30000000;  // fits in int, not in memory: 1.92e9 sources
  o.validate();
  try {
    check_run_memory(config, o);
    FAIL() << "a pool of 1.92e9 sources was accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("--bucket 30000000 x --batch 64: a pool of 1920000000 sources"),
              std::string::npos)
        << e.what();
  }
  o.bucket = 1;
  o.eval_samples = 2000000000;
  EXPECT_THROW(check_run_memory(config, o), ValueError);
  EXPECT_FALSE(fs::exists(o.out_dir));
}

}  // namespace
}  // namespace attn::train
