#pragma once
// Reading members of an archive (zip, tar, tar.gz, ... : whatever Debian's libarchive reads),
// for `attn data get` of the sets whose upstream ships one archive (data/catalog.h).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace attn::io {

// The bytes of the members `names` of the archive at `path`, by name. A member matches a name
// when its path in the archive is the name, or ends in "/" + the name ("fra.txt" matches
// "fra-eng/fra.txt"); two members matching one name are an error. IoError, one line naming
// the archive: not an archive, damaged (a bad CRC, a cut-short stream), a name with no
// member or with two, or a member larger than `max_bytes`.
std::map<std::string, std::string> read_archive_members(const std::string& path, const std::vector<std::string>& names,
                                                        int64_t max_bytes);

}  // namespace attn::io
