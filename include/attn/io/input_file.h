#pragma once
// Opening a file attn reads (checkpoints, data sets, tokenizers, text): only a regular file
// is read. A FIFO would block open() until some writer appears (`--model fifo` hung for
// ever), and a device or directory is never what a user meant.
#include <string>

namespace attn::io {

// A read-only descriptor (close it yourself) for the regular file at `path`, symlinks
// followed. Never blocks: the file is opened with O_NONBLOCK, checked with fstat, and the
// flag is cleared again. IoError "<path>: cannot open: <reason>" or "<path>: not a regular
// file (a FIFO)" (a directory, a device, a socket).
int open_regular_file(const std::string& path);

}  // namespace attn::io
