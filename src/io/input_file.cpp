#include "attn/io/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "attn/error.h"
#include "file_type.h"

namespace attn::io {
namespace {

// The files this process opened for reading: (device, inode) -> the path as given and the
// file's ctime then. (A file deleted since can hand its inode to a new one: the ctime tells
// them apart, so an output that reuses a deleted input's inode is not taken for it.)
struct Input {
  std::string path;
  struct timespec ctime;
};
struct Inputs {
  std::mutex mutex;
  std::map<std::pair<dev_t, ino_t>, Input> files;
};
Inputs& inputs() {
  static Inputs registry;
  return registry;
}
std::atomic<bool> g_refuse_outputs_over_inputs{false};

void remember_input(const struct stat& st, const std::string& path) {
  Inputs& r = inputs();
  std::lock_guard lock(r.mutex);
  r.files.insert_or_assign(std::make_pair(st.st_dev, st.st_ino), Input{path, st.st_ctim});
}

}  // namespace

int open_regular_file(const std::string& path) {
  int fd;
  do fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) throw IoError(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int error = errno;
    ::close(fd);
    throw IoError(path + ": cannot stat: " + std::strerror(error));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw IoError(path + ": not a regular file (" + detail::file_type_name(st.st_mode, "not a plain file") + ")");
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  remember_input(st, path);
  return fd;
}

std::string read_regular_file(const std::string& path, size_t max_bytes) {
  const int fd = open_regular_file(path);
  struct stat st {};
  std::string text;
  int error = 0;
  if (::fstat(fd, &st) != 0) {
    error = errno;
  } else if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    throw IoError(path + ": is " + std::to_string(st.st_size) + " bytes, more than the " + std::to_string(max_bytes) +
                  " this reader takes");
  } else {
    // The size read may differ from st_size (a file still growing): read to the end, bounded.
    text.resize(static_cast<size_t>(st.st_size));
    size_t have = 0;
    for (;;) {
      if (have == text.size()) {
        if (text.size() >= max_bytes) break;
        text.resize(std::min(max_bytes, text.size() + 65536));
      }
      const ssize_t got = ::read(fd, text.data() + have, text.size() - have);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) {
        error = errno;
        break;
      }
      if (got == 0) break;
      have += static_cast<size_t>(got);
    }
    text.resize(have);
  }
  ::close(fd);
  if (error) throw IoError(path + ": cannot read: " + std::strerror(error));
  return text;
}

void read_regular_file_chunks(const std::string& path, const std::function<void(const char*, size_t)>& chunk) {
  const int fd = open_regular_file(path);
  std::vector<char> buffer(size_t{1} << 20);
  for (;;) {
    const ssize_t got = ::read(fd, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int error = errno;
      ::close(fd);
      throw IoError(path + ": cannot read: " + std::strerror(error));
    }
    if (got == 0) break;
    try {
      chunk(buffer.data(), static_cast<size_t>(got));
    } catch (...) {
      ::close(fd);
      throw;
    }
  }
  ::close(fd);
}

namespace {

// The path an input was read by when `st` is that input's, or "".
std::string input_path_of(const struct stat& st) {
  Inputs& r = inputs();
  std::lock_guard lock(r.mutex);
  const auto it = r.files.find({st.st_dev, st.st_ino});
  if (it == r.files.end() || it->second.ctime.tv_sec != st.st_ctim.tv_sec ||
      it->second.ctime.tv_nsec != st.st_ctim.tv_nsec)
    return "";
  return it->second.path;
}

}  // namespace

void check_not_an_input(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;  // nothing there to replace
  if (const std::string input = input_path_of(st); !input.empty())
    throw ValueError((what.empty() ? "" : what + " ") + path + ": is also an input of this command (" + input +
                     "); attn never writes over a file it reads: choose another path");
}

void check_stdout_not_an_input() {
  struct stat st {};
  if (::fstat(STDOUT_FILENO, &st) != 0 || !S_ISREG(st.st_mode)) return;
  if (const std::string input = input_path_of(st); !input.empty())
    throw ValueError("the standard output is the input " + input +
                     " (appended to with >>?); attn never writes over a file it reads: choose another file");
}

void refuse_outputs_over_inputs(bool on) { g_refuse_outputs_over_inputs.store(on); }
bool refusing_outputs_over_inputs() { return g_refuse_outputs_over_inputs.load(); }

}  // namespace attn::io
