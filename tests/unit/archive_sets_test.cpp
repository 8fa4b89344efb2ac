// The data sets whose upstream is one archive (data/catalog.h): libarchive's reading of a zip
// and a .tgz (io/archive.h), CMUdict's npm index.js written as cmudict.dict lines
// (data/cmudict.h), and `get_data_set` from a folder mirror holding an archive made here from
// ../shared/data, checked against a test pin (GetOptions::test_archive_sha256): the unpacked
// files must still match attn's own pins.
#include <archive.h>
#include <archive_entry.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "attn/data/catalog.h"
#include "attn/data/cmudict_npm.h"
#include "attn/data/text.h"
#include "attn/error.h"
#include "attn/io/archive.h"
#include "attn/io/sha256.h"
#include "test_support.h"

namespace attn {
namespace {
namespace fs = std::filesystem;

// A scratch folder removed at the end of the test.
struct Scratch {
  fs::path dir;
  Scratch() {
    dir = fs::temp_directory_path() / ("attn-archive-test-" + std::to_string(::getpid()) + "-" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() { fs::remove_all(dir); }
};

// Writes `members` (path -> bytes) as a zip, or as a gzip-compressed tar (npm's .tgz).
void write_archive(const fs::path& path, const std::map<std::string, std::string>& members, bool zip) {
  archive* a = archive_write_new();
  if (zip) {
    archive_write_set_format_zip(a);
  } else {
    archive_write_set_format_pax_restricted(a);
    archive_write_add_filter_gzip(a);
  }
  ASSERT_EQ(archive_write_open_filename(a, path.c_str()), ARCHIVE_OK) << archive_error_string(a);
  for (const auto& [name, bytes] : members) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, name.c_str());
    archive_entry_set_size(e, static_cast<la_int64_t>(bytes.size()));
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    ASSERT_EQ(archive_write_header(a, e), ARCHIVE_OK) << archive_error_string(a);
    ASSERT_EQ(archive_write_data(a, bytes.data(), bytes.size()), static_cast<la_ssize_t>(bytes.size()));
    archive_entry_free(e);
  }
  ASSERT_EQ(archive_write_close(a), ARCHIVE_OK);
  archive_write_free(a);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void flip_middle_byte(const fs::path& path) {
  std::string bytes = read_file(path);
  bytes[bytes.size() / 2] ^= 0x01;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// The package's index.js layout for cmudict.dict lines "word  PH ON EMES".
std::string npm_module_of(const std::vector<std::string>& lines) {
  std::string js = "/** @type {{ [word: string]: string }} */\nexport const dictionary = {\n";
  for (size_t i = 0; i < lines.size(); ++i) {
    const size_t gap = lines[i].find("  ");
    js += "  \"" + lines[i].substr(0, gap) + "\": \"" + lines[i].substr(gap + 2) + "\"" +
          (i + 1 < lines.size() ? ",\n" : "\n");
  }
  return js + "}\n";
}

TEST(ArchiveMembers, ReadsZipAndTgzMembersByNameOrFolderSuffix) {
  Scratch s;
  const std::map<std::string, std::string> members = {
      {"fra-eng/fra.txt", "Go.\tVa !\n"}, {"_about.txt", "about\n"}, {"other", "x"}};
  for (bool zip : {true, false}) {
    const fs::path path = s.dir / (zip ? "a.zip" : "a.tgz");
    write_archive(path, members, zip);
    const auto got = io::read_archive_members(path.string(), {"fra.txt", "_about.txt"}, 1 << 20);
    ASSERT_EQ(got.size(), 2u) << path;
    EXPECT_EQ(got.at("fra.txt"), "Go.\tVa !\n");
    EXPECT_EQ(got.at("_about.txt"), "about\n");
    EXPECT_NE(error_of([&] {
                io::read_archive_members(path.string(), {"fra.txt", "missing.txt"}, 1 << 20);
              }).find("the archive has no member missing.txt"),
              std::string::npos);
    EXPECT_NE(error_of([&] { io::read_archive_members(path.string(), {"fra.txt"}, 4); }).find("is larger than 4 bytes"),
              std::string::npos);
  }
}

TEST(ArchiveMembers, DamagedOrNotAnArchiveIsAnIoError) {
  Scratch s;
  std::string big;  // enough to compress, so that a flipped byte lands in the deflate stream
  for (int i = 0; i < 2000; ++i) big += "line " + std::to_string(i) + "\n";
  for (bool zip : {true, false}) {
    const fs::path path = s.dir / (zip ? "a.zip" : "a.tgz");
    write_archive(path, {{"fra.txt", big}}, zip);
    flip_middle_byte(path);
    const std::string error = error_of([&] { io::read_archive_members(path.string(), {"fra.txt"}, 1 << 20); });
    EXPECT_NE(error.find(path.string() + ": "), std::string::npos) << path << ": " << error;
    EXPECT_NE(error.find("damaged"), std::string::npos) << path << ": " << error;
  }
  std::ofstream(s.dir / "text.zip") << "not an archive at all\n";
  EXPECT_NE(error_of([&] {
              io::read_archive_members((s.dir / "text.zip").string(), {"fra.txt"}, 1 << 20);
            }).find("not a zip or tar archive, or a damaged one"),
            std::string::npos);
}

TEST(CmudictModule, WritesEachEntryAsALineInTheObjectsOrder) {
  const std::string js =
      "/** @type {{ [word: string]: string }} */\nexport const dictionary = {\n"
      "  \"'bout\": \"B AW1 T\",\n  \"a(2)\": \"EY1\",\n  \"aaa\": \"T R IH2 P AH0 L EY1\"\n}\n";
  EXPECT_EQ(data::cmudict_lines_from_npm_module(js), "'bout  B AW1 T\na(2)  EY1\naaa  T R IH2 P AH0 L EY1\n");
  EXPECT_EQ(data::cmudict_lines_from_npm_module("export const dictionary = {\"zed\": \"Z EH1 D\"};\n"),
            "zed  Z EH1 D\n");
}

TEST(CmudictModule, RefusesWhatIsNotThePackagesDictionaryInOneLine) {
  const std::string head = "export const dictionary = ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"module.exports = {\"a\": \"AH0\"}", "not the package's module"},
      {head + "{\"a\": \"AH0\",, }", "the object does not parse as JSON at byte 39 of index.js"},
      {head + "{\"a\": \"AH0\"", "the object does not parse as JSON at byte 38 of index.js"},
      {head + "{\"a\": \"AH0\"} extra", "the object does not parse as JSON at byte 40 of index.js"},
      {head + "{\"a\": 5}", "the value of \"a\" is a number"},
      {head + "[\"a\"]", "the export is not an object"},
      {head + "{\"a\": \"AH0\", \"a\": \"EY1\"}", "the word \"a\" appears twice"},
      {head + "{\"a b\": \"AH0\"}", "the word \"a b\" is empty or holds white space"},
      {head + "{\"a\": \"AH0\\nEY1\"}", "the pronunciation of \"a\" is empty or not one line"},
      {head + "{\"a\": \"AH0\\tEY1\"}", "the pronunciation of \"a\" is empty or not one line"},
      {head + "{\"a\": \"\"}", "the pronunciation of \"a\" is empty or not one line"},
      {head + "{}", "the dictionary is empty"},
      {"/* not closed", "a comment is not closed"},
  };
  for (const auto& [js, expected] : cases) {
    std::string message;
    try {
      data::cmudict_lines_from_npm_module(js);
    } catch (const ValueError& e) {
      message = e.what();
    }
    EXPECT_NE(message.find("index.js of cmu-pronouncing-dictionary: " + expected), std::string::npos)
        << js << " -> " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

// The package's layout made from ../shared/data's cmudict.dict, converted back: byte for byte the
// content attn pins. (On the real package: docs/data.md, measured with `npm pack`.)
TEST(CmudictModule, SharedDictionaryRoundTripsToItsPinnedContent) {
  ATTN_SKIP_WITHOUT_DATA("cmudict/cmudict.dict.gz");
  const auto lines = data::read_lines(testing::data_dir() + "/cmudict/cmudict.dict.gz");
  const std::string text = data::cmudict_lines_from_npm_module(npm_module_of(lines));
  EXPECT_EQ(text.size(), 3753245u);
  EXPECT_EQ(io::sha256_hex(text), "88b145977a0afff37274d94cbb02754232054082bf633f4cfae42a390c114b60");
}

// get_data_set from a folder mirror laid out like the upstream (NAME/<archive>), the archive
// made here from the shared data and checked against the test's pin.
class ArchiveSetFromMirror : public ::testing::Test {
 protected:
  void SetUp() override { ATTN_SKIP_WITHOUT_DATA("tatoeba-fra-eng/fra.txt.gz"); }
  Scratch s;
  fs::path zip() const { return s.dir / "mirror/tatoeba-fra-eng/fra-eng.zip"; }
  void make_zip(const std::string& fra) {
    fs::create_directories(zip().parent_path());
    write_archive(zip(),
                  {{"_about.txt", read_file(testing::data_dir() + "/tatoeba-fra-eng/_about.txt")}, {"fra.txt", fra}},
                  true);
  }
  std::string shared_fra() const {
    std::string fra;
    for (const std::string& line : data::read_lines(testing::data_dir() + "/tatoeba-fra-eng/fra.txt.gz"))
      fra += line + "\n";
    return fra;
  }
  data::GetOptions options(const std::string& pin) const {
    data::GetOptions o;
    o.to = (s.dir / "to").string();
    o.mirror = (s.dir / "mirror").string();
    o.test_archive_sha256["tatoeba-fra-eng"] = pin;
    return o;
  }
};

TEST_F(ArchiveSetFromMirror, UnpacksAndInstallsTheSharedContent) {
  make_zip(shared_fra());
  const std::string installed = data::get_data_set("tatoeba-fra-eng", options(io::file_sha256(zip().string())));
  const data::VerifyResult v = data::verify_data_set(data::catalog_entry("tatoeba-fra-eng"), installed);
  EXPECT_TRUE(v.verifies) << v.problem;
  EXPECT_NE(read_file(fs::path(installed) / "SOURCE.md").find("a test archive: not the upstream's"), std::string::npos);
  EXPECT_FALSE(fs::exists(s.dir / "to/.partial/tatoeba-fra-eng-fra-eng.zip")) << "the archive is left behind";
}

TEST_F(ArchiveSetFromMirror, TheTestPinCannotInstallOtherContent) {
  make_zip(shared_fra() + "One more.\tEncore une.\n");  // checked against its own pin: it verifies
  const std::string error =
      error_of([&] { data::get_data_set("tatoeba-fra-eng", options(io::file_sha256(zip().string()))); });
  EXPECT_NE(error.find("tatoeba-fra-eng/fra.txt.gz from fra-eng.zip: wrong length: expected 10009515 bytes of content"),
            std::string::npos)
      << error;
  EXPECT_FALSE(fs::exists(s.dir / "to/tatoeba-fra-eng"));
}

TEST_F(ArchiveSetFromMirror, AnArchiveNotMatchingItsPinIsRefused) {
  make_zip(shared_fra());
  const std::string pin = io::file_sha256(zip().string());
  flip_middle_byte(zip());
  const std::string error = error_of([&] { data::get_data_set("tatoeba-fra-eng", options(pin)); });
  EXPECT_NE(error.find("fra-eng.zip: sha256 mismatch: expected " + pin), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(s.dir / "to/tatoeba-fra-eng"));
  // Without the test pin the upstream's pin applies, and a mirror's own archive never matches it.
  data::GetOptions o = options(pin);
  o.test_archive_sha256.clear();
  EXPECT_NE(error_of([&] { data::get_data_set("tatoeba-fra-eng", o); }).find("wrong length: expected 2951390 bytes"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(s.dir / "to/tatoeba-fra-eng"));
}

}  // namespace
}  // namespace attn
