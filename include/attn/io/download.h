#pragma once
// Fetching one file over HTTP(S) with libcurl, resumably: what `attn data get` uses.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace attn::io {

struct DownloadOptions {
  // A transfer that moves no byte for this long is abandoned (a stalled server), and so is a
  // connection that takes this long to open.
  int stall_seconds = 30;
  // Called as bytes arrive: (bytes of the file so far, its full size or -1 when unknown).
  std::function<void(int64_t, int64_t)> progress;
  const std::atomic<bool>* stop = nullptr;  // set (e.g. by SIGINT): the transfer ends, the part is kept
};

struct DownloadResult {
  int64_t bytes = 0;         // the size of `part` afterwards
  int64_t resumed_from = 0;  // bytes `part` already held and the server continued from (0: from the start)
};

// Appends `url`'s bytes to the file `part`, continuing after the bytes `part` already holds
// with an HTTP range request (a server that ignores the range sends the whole file, and
// `part` starts again). Redirects are followed (http and https only, at most 5). The part
// is kept on failure so that the next call resumes. IoError, one line naming the URL: an
// HTTP error status, a stall ("no data for N s"), a connection or TLS failure, a write
// failure of `part` (a full disk), an interruption.
DownloadResult download(const std::string& url, const std::string& part, const DownloadOptions& options);

// Whether `url` answers a HEAD request with a success status (redirects followed as above);
// false for an error status or a failed connection (within stall_seconds).
bool url_exists(const std::string& url, int stall_seconds);

// True for http:// and https:// URLs; anything else is a local path.
bool is_url(const std::string& text);

}  // namespace attn::io
