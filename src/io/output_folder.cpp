#include "attn/io/output_folder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "attn/error.h"
#include "file_type.h"

namespace attn::io {
namespace fs = std::filesystem;
namespace {

const char* not_a_folder(mode_t mode) { return detail::file_type_name(mode, "not a folder"); }

// "run/" -> "run", "" stays "".
std::string without_trailing_slashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

void sync_folder(const std::string& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

void check_output_folder(const std::string& path, const std::string& what) {
  const std::string name = what + " " + path;
  if (path.empty()) throw IoError(what + ": an empty folder name");
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode) && ::stat(path.c_str(), &st) != 0) {
      std::error_code error;
      const fs::path to = fs::read_symlink(path, error);
      throw IoError(name + ": a symbolic link to '" + to.string() +
                    "', which does not exist (remove the link, or make what it names)");
    }
    if (!S_ISDIR(st.st_mode)) throw IoError(name + ": " + not_a_folder(st.st_mode) + ", not a folder");
    return;
  }
  if (errno != ENOENT && errno != ENOTDIR) throw IoError(name + ": " + std::strerror(errno));
  // A folder to make: the nearest path above it that exists must be a folder.
  for (fs::path above = fs::path(without_trailing_slashes(path)).parent_path(); !above.empty();
       above = above.parent_path()) {
    if (::stat(above.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode))
        throw IoError(name + ": cannot make it: " + above.string() + " is " + not_a_folder(st.st_mode) +
                      ", not a folder");
      return;
    }
    if (errno != ENOENT && errno != ENOTDIR)
      throw IoError(name + ": cannot make it: " + above.string() + ": " + std::strerror(errno));
    if (above == above.parent_path()) break;
  }
}

NewFolder::NewFolder(const std::string& path, const std::string& what) : path_(path) {
  check_output_folder(path, what);
  std::error_code error;
  target_ = without_trailing_slashes(path);
  if (fs::exists(target_, error)) {
    if (!fs::is_empty(target_, error))
      throw IoError(what + " " + path + ": exists and is not empty (give a new or empty folder)");
    target_ = fs::canonical(target_).string();  // a link to an empty folder: that folder
  }
  const fs::path parent = fs::absolute(target_).parent_path();
  fs::create_directories(parent, error);
  if (error) throw IoError(what + " " + path + ": cannot make " + parent.string() + ": " + error.message());
  std::string pattern = (parent / ("." + fs::path(target_).filename().string() + ".tmp-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr)
    throw IoError(what + " " + path + ": cannot make a temporary folder in " + parent.string() + ": " +
                  std::strerror(errno));
  temporary_ = pattern;
}

NewFolder::~NewFolder() {
  if (committed_) return;
  std::error_code ignored;
  fs::remove_all(temporary_, ignored);
}

std::string NewFolder::file(const std::string& name) const { return (fs::path(temporary_) / name).string(); }

void NewFolder::commit() {
  ::chmod(
      temporary_.c_str(), 0777 & ~[] {
        const mode_t mask = ::umask(0);
        ::umask(mask);
        return mask;
      }());  // mkdtemp made it 0700; a folder the user keeps gets the usual permissions
  sync_folder(temporary_);
  if (std::rename(temporary_.c_str(), target_.c_str()) != 0)
    throw IoError(path_ + ": cannot put the folder in place: " + std::strerror(errno));
  committed_ = true;
  sync_folder(fs::absolute(target_).parent_path().string());
}

}  // namespace attn::io
