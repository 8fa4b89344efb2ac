#pragma once
// SHA-256 (FIPS 180-4) through OpenSSL's libcrypto, as lower-case hex: the checksum attn pins
// for the data sets it downloads (data/catalog.h) and records for pretrained word vectors.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace attn::io {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t bytes);
  void update(std::string_view text) { update(text.data(), text.size()); }
  // The digest of everything passed so far, as 64 hex digits; the object is spent.
  std::string hex_digest();

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

std::string sha256_hex(std::string_view bytes);

// The SHA-256 of the file's bytes as they are on disk; IoError naming the path.
std::string file_sha256(const std::string& path);

// The SHA-256 and length of a file's content: of the decompressed bytes when the file is
// gzip (its magic number), else of the file as it is. IoError naming the path when it cannot
// be read or its gzip stream is corrupt or truncated.
struct ContentDigest {
  std::string sha256;
  int64_t bytes = 0;
  bool gzip = false;
};
ContentDigest content_sha256(const std::string& path);

}  // namespace attn::io
