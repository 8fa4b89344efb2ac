#include "attn/io/archive.h"

#include <archive.h>
#include <archive_entry.h>

#include <memory>

#include "attn/error.h"
#include "attn/io/sha256.h"

namespace attn::io {
namespace {

// The name in `names` that the member path `member` stands for, or "".
std::string wanted_name(const std::string& member, const std::vector<std::string>& names) {
  for (const std::string& name : names)
    if (member == name || (member.size() > name.size() && member.ends_with("/" + name))) return name;
  return "";
}

}  // namespace

std::map<std::string, std::string> read_archive_members(const std::string& path, const std::vector<std::string>& names,
                                                        int64_t max_bytes) {
  // libarchive does not check a gzip stream's CRC here (a .tgz with a flipped byte unpacked to
  // other bytes without an error): zlib reads a gzip-compressed archive through first, and
  // refuses a corrupt or cut-short one. (A zip's members carry their own CRC, which libarchive
  // checks.)
  try {
    (void)content_sha256(path);
  } catch (const IoError& e) {
    throw IoError(std::string(e.what()) + ": a damaged archive");
  }
  std::unique_ptr<archive, int (*)(archive*)> a(archive_read_new(), archive_read_free);
  if (!a) throw IoError(path + ": libarchive could not start");
  archive_read_support_filter_all(a.get());
  archive_read_support_format_zip(a.get());
  archive_read_support_format_tar(a.get());
  auto fail = [&](const std::string& what) -> IoError {
    const char* why = archive_error_string(a.get());
    return IoError(path + ": " + what + (why ? std::string(" (") + why + ")" : std::string()) +
                   ": not a zip or tar archive, or a damaged one");
  };
  if (archive_read_open_filename(a.get(), path.c_str(), 1 << 16) != ARCHIVE_OK) throw fail("cannot open the archive");
  std::map<std::string, std::string> found;
  for (;;) {
    archive_entry* entry = nullptr;
    const int status = archive_read_next_header(a.get(), &entry);
    if (status == ARCHIVE_EOF) break;
    if (status != ARCHIVE_OK && status != ARCHIVE_WARN) throw fail("cannot read the next member");
    const char* member_path = archive_entry_pathname(entry);
    const std::string name = member_path ? wanted_name(member_path, names) : "";
    if (name.empty() || archive_entry_filetype(entry) != AE_IFREG) {
      // Skipped members are still read through, so that a damaged stream is noticed.
      if (archive_read_data_skip(a.get()) != ARCHIVE_OK) throw fail("cannot read past a member");
      continue;
    }
    if (found.count(name)) throw IoError(path + ": two members named " + name);
    std::string bytes;
    char buffer[1 << 16];
    for (;;) {
      const la_ssize_t n = archive_read_data(a.get(), buffer, sizeof buffer);
      if (n < 0) throw fail("cannot read " + std::string(member_path));
      if (n == 0) break;
      if (static_cast<int64_t>(bytes.size()) + n > max_bytes)
        throw IoError(path + ": " + member_path + " is larger than " + std::to_string(max_bytes) + " bytes");
      bytes.append(buffer, static_cast<size_t>(n));
    }
    found.emplace(name, std::move(bytes));
  }
  for (const std::string& name : names)
    if (!found.count(name)) throw IoError(path + ": the archive has no member " + name);
  return found;
}

}  // namespace attn::io
