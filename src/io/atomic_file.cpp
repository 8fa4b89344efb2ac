#include "attn/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "attn/error.h"
#include "attn/io/input_file.h"

namespace attn::io {
namespace {

std::string folder_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// The path with every symlink in its last component followed (a dangling link gives the
// missing file it names, which is then created). Links in the folders above need no
// following: rename() within the final folder goes through them.
std::string follow_symlinks(const std::string& path, const std::string& path_for_messages) {
  std::string current = path;
  for (int hops = 0; hops < 40; ++hops) {  // 40: the kernel's own limit (ELOOP)
    struct stat st;
    if (::lstat(current.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return current;
    std::vector<char> buffer(static_cast<size_t>(std::max<off_t>(st.st_size, 255)) + 1);
    const ssize_t n = ::readlink(current.c_str(), buffer.data(), buffer.size() - 1);
    if (n < 0) throw IoError(path_for_messages + ": cannot read symlink '" + current + "': " + std::strerror(errno));
    std::string link(buffer.data(), static_cast<size_t>(n));
    current = link.starts_with('/') ? link : folder_of(current) + "/" + link;
  }
  throw IoError(path_for_messages + ": too many levels of symbolic links");
}

mode_t new_file_mode() {
  static const mode_t mode = [] {
    const mode_t mask = ::umask(0);  // the only way to read the umask; restored at once
    ::umask(mask);
    return static_cast<mode_t>(0666 & ~mask);
  }();
  return mode;
}

}  // namespace

AtomicFile::AtomicFile(const std::string& path) : path_(path) {
  if (path.empty()) throw IoError("cannot write a file with an empty name");
  target_ = follow_symlinks(path, path);
  if (refusing_outputs_over_inputs()) check_not_an_input(path, "");
  struct stat st;
  const bool exists = ::stat(target_.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) fail("cannot write", errno);
  mode_t mode = new_file_mode();
  if (exists) {
    if (S_ISDIR(st.st_mode)) throw IoError(path + ": is a directory, not a file");
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
      in_place_ = true;
      write_path_ = target_;
      return;
    }
    if (!S_ISREG(st.st_mode)) throw IoError(path + ": not a regular file, device or FIFO; refusing to replace it");
    mode = st.st_mode & 07777;
  }
  std::string name = target_.substr(target_.find_last_of('/') + 1);
  std::string pattern = folder_of(target_) + "/" + name + ".tmp-XXXXXX";
  fd_ = ::mkostemp(pattern.data(), O_CLOEXEC);
  if (fd_ < 0) fail("cannot create a temporary file in '" + folder_of(target_) + "'", errno);
  write_path_ = pattern;
  if (::fchmod(fd_, mode) != 0) {
    const int error = errno;
    ::close(fd_);  // a throwing constructor runs no destructor
    ::unlink(write_path_.c_str());
    fail("cannot set permissions", error);
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !in_place_ && !write_path_.empty()) ::unlink(write_path_.c_str());
}

void AtomicFile::fail(const std::string& what, int error) const {
  throw IoError(path_ + ": " + what + ": " + std::strerror(error));
}

int AtomicFile::fd() {
  if (fd_ < 0) {
    do fd_ = ::open(write_path_.c_str(), O_WRONLY | O_CLOEXEC);
    while (fd_ < 0 && errno == EINTR);
    if (fd_ < 0) fail("cannot open", errno);
  }
  return fd_;
}

void AtomicFile::write(const void* data, size_t bytes) {
  const auto* p = static_cast<const char*>(data);
  const int out = fd();
  while (bytes > 0) {
    const ssize_t put = ::write(out, p, std::min<size_t>(bytes, size_t{1} << 30));
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) fail("cannot write", put < 0 ? errno : EIO);
    p += put;
    bytes -= static_cast<size_t>(put);
  }
}

void AtomicFile::commit() {
  if (committed_) return;
  if (in_place_) {
    // A device or FIFO: nothing to sync or rename; close to see a deferred error.
    if (fd_ >= 0) {
      const int closed = ::close(fd_);
      fd_ = -1;
      if (closed != 0) fail("cannot write", errno);
    }
    committed_ = true;
    return;
  }
  if (::fsync(fd_) != 0) fail("cannot write (fsync)", errno);
  const int closed = ::close(fd_);
  fd_ = -1;
  if (closed != 0) fail("cannot write (close)", errno);
  if (::rename(write_path_.c_str(), target_.c_str()) != 0) fail("cannot rename the temporary file into place", errno);
  committed_ = true;
  // Make the rename durable. The new file is complete and in place, so a folder that cannot
  // be synced (some network file systems) is not an error.
  const int folder = ::open(folder_of(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (folder >= 0) {
    ::fsync(folder);
    ::close(folder);
  }
}

void write_file_atomically(const std::string& path, std::string_view contents) {
  AtomicFile file(path);
  file.write(contents);
  file.commit();
}

void copy_file_atomically(const std::string& from, const std::string& to) {
  const int in = open_regular_file(from);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{in};
  AtomicFile file(to);
  std::vector<char> buffer(size_t{1} << 20);
  for (;;) {
    const ssize_t got = ::read(in, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw IoError(from + ": cannot read: " + std::strerror(errno));
    if (got == 0) break;
    file.write(buffer.data(), static_cast<size_t>(got));
  }
  file.commit();
}

}  // namespace attn::io
