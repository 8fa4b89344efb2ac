#pragma once
// CRC-32 (zlib's polynomial, as Python's zlib.crc32) as 8 lower-case hex digits: the
// checksum attn records for checkpoint tensors and for the tokenizer a model was trained with.
#include <cstddef>
#include <string>

namespace attn::io {

std::string crc32_hex(const void* data, size_t bytes);
// The CRC-32 of the regular file at `path` (io::open_regular_file); IoError naming it.
std::string file_crc32_hex(const std::string& path);

}  // namespace attn::io
