#pragma once
// The data sets `attn data get` installs, each file's SHA-256 pinned here, and where the
// commands look for data when --data is not given. docs/data.md is the user's page.
//
// A data folder (--to DIR, default data_home()) holds one folder per data set, laid out as
// ../shared/data is: DIR/sst2/sentiment-train.gz, DIR/multi30k/raw/train.de.gz, ...; each
// installed set has attn's SOURCE.md beside its files. A mirror (--mirror DIR|URL) is laid
// out the same way.
//
// What is pinned: the SHA-256 and length of each file's CONTENT, i.e. of the decompressed
// bytes for a file stored gzip-compressed (its name ends in .gz). The upstream sources ship
// some files plain (SST-2's training file, Multi30k's tokenised text) that attn, like
// ../shared/data, keeps gzip-compressed; pinning the content makes one checksum hold for the
// upstream file, the mirror's copy and the installed file, and the gzip container (whose
// bytes depend on the compressor) is checked by its own CRC when read.
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace attn::data {

struct CatalogFile {
  const char* path;      // under DIR/NAME/ (and MIRROR/NAME/)
  const char* upstream;  // under the set's upstream URL; "" when the upstream has no such file
  int64_t bytes;         // content length (decompressed for .gz); 0 with an empty sha256
  const char* sha256;    // of the content; "" = not pinned: the set refuses to install
};

// An upstream that ships a set as one archive (a zip, an npm package's .tgz): fetched whole,
// its bytes checked against `sha256`, then `unpack` writes the set's files into a folder,
// where each is checked against its own pin before it is installed.
struct CatalogArchive {
  const char* url;     // the archive's upstream URL
  const char* file;    // its name in a mirror laid out like the upstream: MIRROR/NAME/<file>
  int64_t bytes;       // the archive's length
  const char* sha256;  // of the archive's bytes as downloaded (not of a decompressed content)
  void (*unpack)(const std::string& archive, const std::string& folder);  // IoError / ValueError, one line
};

struct CatalogEntry {
  const char* name;      // sst2, multi30k, ...
  const char* title;     // one line
  const char* upstream;  // URL prefix of the upstream files ("" when attn cannot fetch them itself)
  const char* origin;    // what the upstream is (repository and commit, or the publisher's page)
  const char* license;   // as the upstream states it
  const char* note;      // why a set cannot be fetched from upstream, or ""
  std::span<const CatalogFile> files;
  const CatalogArchive* archive;  // the upstream's archive the files are made from, or nullptr
};

// Every known set, in the order `attn data list` shows them.
std::span<const CatalogEntry> catalog();
// The entry named `name`; ValueError naming the known ones.
const CatalogEntry& catalog_entry(const std::string& name);
// "sst2, multi30k, ..."
std::string catalog_names();

// $XDG_DATA_HOME/attn, or ~/.local/share/attn ("" when neither HOME nor XDG_DATA_HOME is set).
std::string data_home();

struct GetOptions {
  std::string to;  // the data folder (default data_home())
  // "" (upstream), a folder, or an http(s) URL prefix laid out as a data folder (NAME/FILE);
  // for a set with an upstream archive, a mirror holding NAME/<archive file> (laid out like
  // the upstream) is unpacked instead.
  std::string mirror;
  // Tests only (docs/data.md, "Testing the archive sets"): NAME -> the SHA-256 a mirror's
  // archive of set NAME is checked against instead of the upstream's pin, so that a test can
  // serve an archive it made from ../shared/data. Ignored without a mirror. The unpacked files
  // are still checked against their own pins, so no content other than the pinned one can be
  // installed through it.
  std::map<std::string, std::string> test_archive_sha256;
  int stall_seconds = 30;
  const std::atomic<bool>* stop = nullptr;
  std::function<void(const std::string&)> say;  // one line of news ("sst2: sentiment-dev from ...")
  // Bytes of a file as they arrive: (NAME/path, bytes so far, full size or -1); ("", 0, 0) when it ends.
  std::function<void(const std::string&, int64_t, int64_t)> progress_of;
};

// Installs `name` into options.to/NAME/: every file fetched (resuming what an earlier,
// interrupted run left in options.to/.partial/NAME/), its content checked against the pinned
// length and SHA-256, then the folder put in place by one rename with its SOURCE.md. For a set
// with an archive (tatoeba-fra-eng, cmudict), the archive is fetched instead (into
// options.to/.partial/, resumable too), checked against its pin, unpacked into the staging
// folder, and every unpacked file checked against its pin as a fetched one is. A set
// already installed and verifying is left as it is. Another `attn data get` into the same
// folder at the same time is refused (a lock on options.to/.lock). On any failure nothing is
// installed and an existing DIR/NAME is untouched: ValueError for a checksum or length
// mismatch (the bad file is deleted), IoError for the transfer or the disk.
// Returns the installed folder.
std::string get_data_set(const std::string& name, const GetOptions& options);

struct VerifyResult {
  bool complete = false;  // every file present
  bool verifies = false;  // and every content checksum matches
  std::string problem;    // the first missing or mismatching file, else ""
};
// Checks DIR/NAME (a data folder's copy of a set) against the pins.
VerifyResult verify_data_set(const CatalogEntry& entry, const std::string& folder);

// Where a command finds its data when --data is not given: data_home() if it holds `set`
// (e.g. "sst2"), else ../shared/data if that does. `chosen` says which and why, for the
// user; "" and an empty path when neither has it.
struct DataLookup {
  std::string path;    // the data folder (holding set/), or ""
  std::string chosen;  // "data: using ~/.local/share/attn (attn data get); --data DIR to choose"
  std::string looked;  // the folders looked in, for the error when nothing was found
};
DataLookup find_data(const std::string& set);

}  // namespace attn::data
