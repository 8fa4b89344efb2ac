#include "attn/io/checksum.h"

#include <zlib.h>

#include <cstdio>

#include "attn/io/input_file.h"

namespace attn::io {
namespace {

std::string hex(uLong crc) {
  char text[9];
  std::snprintf(text, sizeof text, "%08lx", static_cast<unsigned long>(crc) & 0xffffffffUL);
  return text;
}

}  // namespace

std::string crc32_hex(const void* data, size_t bytes) {
  return hex(::crc32_z(::crc32_z(0L, Z_NULL, 0), static_cast<const Bytef*>(data), bytes));
}

std::string file_crc32_hex(const std::string& path) {
  uLong crc = ::crc32_z(0L, Z_NULL, 0);
  read_regular_file_chunks(
      path, [&](const char* data, size_t bytes) { crc = ::crc32_z(crc, reinterpret_cast<const Bytef*>(data), bytes); });
  return hex(crc);
}

}  // namespace attn::io
