#include "attn/io/sha256.h"

#include <openssl/evp.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <vector>

#include "attn/error.h"
#include "attn/io/input_file.h"

namespace attn::io {

struct Sha256::Context {
  EVP_MD_CTX* md = nullptr;
};

Sha256::Sha256() : context_(std::make_unique<Context>()) {
  context_->md = EVP_MD_CTX_new();
  if (context_->md == nullptr || EVP_DigestInit_ex(context_->md, EVP_sha256(), nullptr) != 1)
    throw IoError("sha256: OpenSSL could not start a digest");
}

Sha256::~Sha256() { EVP_MD_CTX_free(context_->md); }

void Sha256::update(const void* data, size_t bytes) {
  if (EVP_DigestUpdate(context_->md, data, bytes) != 1) throw IoError("sha256: OpenSSL digest update failed");
}

std::string Sha256::hex_digest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(context_->md, digest, &length) != 1) throw IoError("sha256: OpenSSL digest failed");
  std::string hex;
  char pair[3];
  for (unsigned int i = 0; i < length; ++i) {
    std::snprintf(pair, sizeof pair, "%02x", digest[i]);
    hex += pair;
  }
  return hex;
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 h;
  h.update(bytes);
  return h.hex_digest();
}

std::string file_sha256(const std::string& path) {
  Sha256 h;
  read_regular_file_chunks(path, [&](const char* data, size_t bytes) { h.update(data, bytes); });
  return h.hex_digest();
}

ContentDigest content_sha256(const std::string& path) {
  const int fd = open_regular_file(path);  // IoError for a missing file, a directory, a FIFO
  gzFile in = gzdopen(fd, "rb");
  if (in == nullptr) {
    ::close(fd);
    throw IoError(path + ": cannot open");
  }
  ContentDigest d;
  d.gzip = gzdirect(in) == 0;
  Sha256 h;
  std::vector<char> buffer(1 << 16);
  for (;;) {
    const int n = gzread(in, buffer.data(), static_cast<unsigned>(buffer.size()));
    if (n < 0) {
      int code = 0;
      const std::string why = gzerror(in, &code);
      gzclose(in);
      throw IoError(path + ": corrupt gzip data (" + why + ")");
    }
    if (n == 0) break;
    h.update(buffer.data(), static_cast<size_t>(n));
    d.bytes += n;
  }
  // gzread reports a stream cut short only at close (Z_BUF_ERROR).
  if (const int closed = gzclose(in); closed != Z_OK)
    throw IoError(path + ": corrupt or truncated gzip data (zlib error " + std::to_string(closed) + ")");
  d.sha256 = h.hex_digest();
  return d;
}

}  // namespace attn::io
