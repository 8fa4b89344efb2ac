#pragma once
// Shared by the libFuzzer targets: the loaders under test read files, so each input is
// written to a scratch file first (in /dev/shm when it exists: no disk traffic per run).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace attn::fuzz {

// A per-process scratch path with `suffix` ("x.safetensors", "dir/raw/train.de.gz").
inline std::string scratch_path(const std::string& suffix) {
  static const std::string dir = [] {
    const char* base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return std::string(base) + "/attn-fuzz-" + std::to_string(getpid());
  }();
  return dir + "/" + suffix;
}

// Writes `size` bytes to `path` (its folders created), aborting when it cannot: a fuzzer that
// silently tested nothing would report success.
void write_file(const std::string& path, const uint8_t* data, size_t size);

// Every exception the library documents (attn::Error: ShapeError, ValueError, IoError) is an
// accepted answer to bad input; anything else escapes and libFuzzer reports it as a crash.
template <class Fn>
void expect_only_attn_errors(Fn&& fn);

// Aborts (a finding) with "fuzz: broken promise: <what>" unless `ok`: for the promises a
// target checks beyond "no crash".
inline void require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz: broken promise: %s\n", what);
  std::abort();
}

}  // namespace attn::fuzz

#include <filesystem>
#include <fstream>

#include "attn/error.h"

namespace attn::fuzz {

inline void write_file(const std::string& path, const uint8_t* data, size_t size) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
}

template <class Fn>
void expect_only_attn_errors(Fn&& fn) {
  try {
    fn();
  } catch (const attn::Error&) {
  }
}

}  // namespace attn::fuzz
