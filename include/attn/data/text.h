#pragma once
// Reading and writing text files, one record per line. gzip-compressed files (the data
// sets under ../shared/data are) are read transparently: the same call reads "train.de.gz"
// and "sentiment-dev".
#include <string>
#include <string_view>
#include <vector>

#include "attn/printable.h"

namespace attn::data {

// Every line of `path` without its '\n' (a trailing '\r' is kept: the data is LF-only).
// A last line without '\n' is still a line; an empty file gives no lines. Reads plain and
// gzip files alike; bytes that are not valid UTF-8 become U+FFFD (valid_utf8). Throws
// IoError naming the path when it cannot be opened or a gzip stream is corrupt or truncated.
std::vector<std::string> read_lines(const std::string& path);

// utf8_length_at(s, i): the byte length of the UTF-8 sequence at s[i] (attn/printable.h).
using attn::utf8_length_at;
// `text` with each byte that does not start a valid sequence replaced by U+FFFD, as
// Python's errors="replace" does; valid text comes back unchanged.
std::string valid_utf8(std::string_view text);
// The code points of a UTF-8 string, each as its own UTF-8 string. Invalid bytes become
// U+FFFD.
std::vector<std::string> utf8_characters(std::string_view text);

// The fields of `line` between runs of spaces, tabs and carriage returns, none empty: the words
// and values of a word-vector line, the ids or pieces of a line `attn tokenize decode` reads.
std::vector<std::string_view> split_fields(std::string_view line);

// Writes `lines`, each followed by '\n', atomically through io::AtomicFile (a failure never
// leaves a half-written file; a symlink is written through, a device in place). Throws
// IoError naming the path.
void write_lines(const std::string& path, const std::vector<std::string>& lines);

// Whether `path` names an existing regular file.
bool file_exists(const std::string& path);

}  // namespace attn::data
