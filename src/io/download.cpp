#include "attn/io/download.h"

#include <curl/curl.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "attn/error.h"
#include "attn/version.h"

namespace attn::io {
namespace {

struct Transfer {
  std::FILE* out = nullptr;
  int write_errno = 0;
  int64_t offset = 0;  // bytes in `part` before this transfer
  const DownloadOptions* options = nullptr;
  bool stopped = false;
};

size_t on_data(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t bytes = size * count;
  if (std::fwrite(data, 1, bytes, t->out) != bytes) {
    t->write_errno = errno ? errno : EIO;
    return 0;  // libcurl: CURLE_WRITE_ERROR
  }
  return bytes;
}

int on_progress(void* user, curl_off_t total, curl_off_t now, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  if (t->options->stop && t->options->stop->load()) {
    t->stopped = true;
    return 1;  // libcurl: CURLE_ABORTED_BY_CALLBACK
  }
  if (t->options->progress) t->options->progress(t->offset + now, total > 0 ? t->offset + total : -1);
  return 0;
}

struct CurlGlobal {
  CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

using CurlHandle = std::unique_ptr<CURL, void (*)(CURL*)>;

// A handle for `url` with the options every request shares: attn's user agent, redirects
// (http and https only, at most 5), an HTTP error status as a failure, the connect timeout.
// (libcurl copies the strings it is given.)
CurlHandle open_curl(const std::string& url, int stall_seconds) {
  static CurlGlobal global;
  CurlHandle curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) throw IoError(url + ": libcurl could not start");
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_USERAGENT, (std::string("attn/") + version()).c_str());
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, static_cast<long>(stall_seconds));
  return curl;
}

// One GET of `url` appended to `part` from `offset` (0: the whole file).
CURLcode get(const std::string& url, const std::string& part, int64_t offset, const DownloadOptions& o, Transfer& t,
             long& status, char (&error)[CURL_ERROR_SIZE]) {
  CurlHandle curl = open_curl(url, o.stall_seconds);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> out(std::fopen(part.c_str(), offset > 0 ? "ab" : "wb"), std::fclose);
  if (!out) throw IoError(part + ": cannot write: " + std::strerror(errno));
  t.out = out.get();
  t.offset = offset;
  t.options = &o;
  error[0] = '\0';
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  // A stall: under 1 byte/s for stall_seconds.
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, static_cast<long>(o.stall_seconds));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
  if (offset > 0) curl_easy_setopt(c, CURLOPT_RESUME_FROM_LARGE, static_cast<curl_off_t>(offset));
  const CURLcode code = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (std::fflush(out.get()) != 0 && code == CURLE_OK) t.write_errno = errno ? errno : EIO;
  if (std::fclose(out.release()) != 0 && t.write_errno == 0 && code == CURLE_OK) t.write_errno = errno ? errno : EIO;
  return code;
}

}  // namespace

bool url_exists(const std::string& url, int stall_seconds) {
  CurlHandle curl = open_curl(url, stall_seconds);
  curl_easy_setopt(curl.get(), CURLOPT_NOBODY, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT, static_cast<long>(stall_seconds));
  return curl_easy_perform(curl.get()) == CURLE_OK;
}

bool is_url(const std::string& text) { return text.starts_with("http://") || text.starts_with("https://"); }

DownloadResult download(const std::string& url, const std::string& part, const DownloadOptions& o) {
  std::error_code ec;
  int64_t offset =
      std::filesystem::is_regular_file(part, ec) ? static_cast<int64_t>(std::filesystem::file_size(part, ec)) : 0;
  if (ec) offset = 0;
  for (int attempt = 0;; ++attempt) {
    Transfer t;
    long status = 0;
    char error[CURL_ERROR_SIZE];
    const CURLcode code = get(url, part, offset, o, t, status, error);
    const std::string detail = error[0] ? error : curl_easy_strerror(code);
    if (code == CURLE_OK && t.write_errno == 0) {
      const int64_t bytes = static_cast<int64_t>(std::filesystem::file_size(part));
      return {.bytes = bytes, .resumed_from = offset};
    }
    // The server cannot continue the part (no range support, or the part is longer than the
    // file): start again from nothing, once.
    if (offset > 0 && attempt == 0 && (code == CURLE_RANGE_ERROR || status == 416)) {
      offset = 0;
      continue;
    }
    if (t.write_errno != 0) throw IoError(part + ": cannot write: " + std::strerror(t.write_errno));
    if (t.stopped) throw IoError(url + ": interrupted; the partial download is kept and the next run resumes it");
    if (code == CURLE_OPERATION_TIMEDOUT)
      throw IoError(url + ": the server stalled (no data for " + std::to_string(o.stall_seconds) +
                    " s); the partial download is kept and the next run resumes it");
    if (code == CURLE_HTTP_RETURNED_ERROR) throw IoError(url + ": HTTP status " + std::to_string(status));
    throw IoError(url + ": " + detail);
  }
}

}  // namespace attn::io
