#pragma once
// Opening a file attn reads (checkpoints, data sets, tokenizers, text, a run folder's log):
// only a regular file is read. A FIFO would block open() until some writer appears
// (`--model fifo` hung for ever), a link to /dev/zero would be read until memory ran out,
// and a device or directory is never what a user meant.
//
// Every file opened here is remembered (device and inode) as an input of this process, so
// that an output never replaces one: `attn view --model M --out M` used to replace the
// checkpoint with HTML. check_not_an_input() is that check; io::AtomicFile, the one writer,
// makes it for every output once the CLI has called refuse_outputs_over_inputs().
#include <cstddef>
#include <functional>
#include <string>

namespace attn::io {

// A read-only descriptor (close it yourself) for the regular file at `path`, symlinks
// followed. Never blocks: the file is opened with O_NONBLOCK, checked with fstat, and the
// flag is cleared again. IoError "<path>: cannot open: <reason>" or "<path>: not a regular
// file (a FIFO)" (a directory, a device, a socket). The file is remembered as an input.
int open_regular_file(const std::string& path);

// The whole regular file at `path` (as open_regular_file), refused with IoError "<path>: is
// N bytes, more than the M this reader takes" when larger than `max_bytes`.
std::string read_regular_file(const std::string& path, size_t max_bytes);

// Passes the regular file at `path` (as open_regular_file) to `chunk` piece by piece, in
// order, for a checksum of a file of any size. IoError "<path>: cannot read: <reason>".
void read_regular_file_chunks(const std::string& path, const std::function<void(const char*, size_t)>& chunk);

// ValueError when `path` (symlinks followed) is the same file (device and inode, so a hard
// link or another spelling of the path too) as one this process opened for reading:
// "<what> <path>: is also an input of this command (<input path>); attn never writes over a
// file it reads: choose another path". `what` names the output ("--out"). Nothing happens
// when `path` does not exist.
void check_not_an_input(const std::string& path, const std::string& what);
// The same for the standard output (`attn translate --model M >> M` appended text to the
// checkpoint): ValueError when it is a regular file this process read.
void check_stdout_not_an_input();
// From now on io::AtomicFile refuses (check_not_an_input) to replace a file this process has
// read. The attn CLI turns it on; a library user may rewrite a file it loaded (attn.save).
void refuse_outputs_over_inputs(bool on = true);
bool refusing_outputs_over_inputs();

}  // namespace attn::io
