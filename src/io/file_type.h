#pragma once
// Private to src/io/: what a stat() mode names, for the errors of input_file and output_folder.
#include <sys/stat.h>

namespace attn::io::detail {

// "a file", "a directory", "a FIFO", "a character device", "a block device", "a socket", or
// `otherwise` (a symbolic link from lstat(), or a type this list does not know).
inline const char* file_type_name(mode_t mode, const char* otherwise) {
  if (S_ISREG(mode)) return "a file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return otherwise;
}

}  // namespace attn::io::detail
