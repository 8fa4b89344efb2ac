#pragma once
// The one way attn writes a file a user keeps (checkpoints, text outputs, pictures, CSV
// and JSON results): readers see the old file or the complete new one, never a partial
// one, and a crash or full disk never loses the old file. docs/reliability.md lists the
// promises; in detail, for the path given:
//
//   missing, or a regular file  the bytes go to a fresh temporary file in the same folder
//                               (mkstemp: "<name>.tmp-XXXXXX", so a user's own
//                               "<name>.tmp" is never touched), which is fsync'ed, given
//                               the old file's permissions (a new file gets 0666 & ~umask),
//                               renamed over the path, and the folder is fsync'ed.
//   a symlink                   followed (through any chain of links) and its target is
//                               written as above: the link stays a link.
//   a character device or FIFO  written in place (/dev/null, /dev/stdout, a named pipe);
//                               there is nothing to replace, so no atomicity.
//   a directory, block device   refused: IoError, nothing written.
//   or socket
//   a file this process read    refused (ValueError, nothing written) once the CLI has called
//                               io::refuse_outputs_over_inputs() (attn/io/input_file.h).
//
// Every failure is one IoError "<path>: <problem>" (missing folder, permission, ENOSPC);
// the temporary file is removed and the old file is left as it was. Renaming breaks a
// hard link, as every temporary-and-rename writer does.
#include <cstddef>
#include <string>
#include <string_view>

namespace attn::io {

class AtomicFile {
 public:
  // Decides what `path` is (above) and, for a regular target, creates the temporary file.
  explicit AtomicFile(const std::string& path);
  // Without commit(): the temporary file is removed and `path` is untouched.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Where the bytes go: the temporary file, or the path itself when written in place. For
  // writers that open a file by name (a library that takes a file name); they must write
  // to this name and not replace it.
  const std::string& write_path() const { return write_path_; }
  // The path as given, for messages.
  const std::string& path() const { return path_; }
  // Appends; IoError "<path>: cannot write: <reason>" on failure.
  void write(const void* data, size_t bytes);
  void write(std::string_view text) { write(text.data(), text.size()); }
  // Flushes to disk and puts the file in place. IoError on failure (the old file stays).
  void commit();

 private:
  int fd();  // opened on first use when written in place, so a by-name writer never waits on a FIFO twice
  [[noreturn]] void fail(const std::string& what, int error) const;

  std::string path_;        // as given
  std::string target_;      // path_ with symlinks followed
  std::string write_path_;  // temporary file, or target_ when in place
  bool in_place_ = false;
  bool committed_ = false;
  int fd_ = -1;
};

// `contents` written to `path` atomically, as above.
void write_file_atomically(const std::string& path, std::string_view contents);
// The bytes of regular file `from` written to `to` atomically. IoError naming `from` if it
// cannot be read.
void copy_file_atomically(const std::string& from, const std::string& to);

}  // namespace attn::io
