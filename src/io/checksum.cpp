#include "attn/io/checksum.h"

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "attn/error.h"
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
  const int fd = open_regular_file(path);
  uLong crc = ::crc32_z(0L, Z_NULL, 0);
  std::vector<unsigned char> buffer(size_t{1} << 20);
  for (;;) {
    const ssize_t got = ::read(fd, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int error = errno;
      ::close(fd);
      throw IoError(path + ": cannot read: " + std::strerror(error));
    }
    if (got == 0) break;
    crc = ::crc32_z(crc, buffer.data(), static_cast<size_t>(got));
  }
  ::close(fd);
  return hex(crc);
}

}  // namespace attn::io
