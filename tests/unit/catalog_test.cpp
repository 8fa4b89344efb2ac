// The data catalog (data/catalog.h): every pinned checksum matches ../shared/data, the copy
// attn's results were measured on; names, the data folder and the lookup order.
#include "attn/data/catalog.h"

#include <cstdlib>
#include <filesystem>

#include "attn/error.h"
#include "test_support.h"

namespace attn::data {
namespace {
namespace fs = std::filesystem;

TEST(Catalog, EveryPinMatchesTheSharedData) {
  ATTN_SKIP_WITHOUT_DATA("sst2/sentiment-dev");
  int checked = 0;
  for (const CatalogEntry& e : catalog()) {
    const fs::path folder = fs::path(attn::testing::data_dir()) / e.name;
    if (e.files[0].sha256[0] == '\0') continue;  // the word vectors: nothing pinned, nothing here
    ASSERT_TRUE(fs::is_directory(folder)) << folder;
    const VerifyResult v = verify_data_set(e, folder.string());
    EXPECT_TRUE(v.verifies) << e.name << ": " << v.problem;
    ++checked;
  }
  EXPECT_EQ(checked, 4);  // sst2, multi30k, tatoeba-fra-eng, cmudict
}

TEST(Catalog, UnknownNameListsTheKnownOnes) {
  try {
    catalog_entry("sst");
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown data set 'sst' (known: sst2, multi30k, tatoeba-fra-eng, cmudict"),
              std::string::npos)
        << e.what();
  }
  EXPECT_STREQ(catalog_entry("multi30k").name, "multi30k");
}

TEST(Catalog, DataHomeFollowsXdgThenHome) {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  const char* home = std::getenv("HOME");
  const std::string saved = xdg ? xdg : "", saved_home = home ? home : "";
  ::setenv("XDG_DATA_HOME", "/x/share", 1);
  EXPECT_EQ(data_home(), "/x/share/attn");
  ::unsetenv("XDG_DATA_HOME");
  ::setenv("HOME", "/home/u", 1);
  EXPECT_EQ(data_home(), "/home/u/.local/share/attn");
  if (xdg) ::setenv("XDG_DATA_HOME", saved.c_str(), 1);
  if (home) ::setenv("HOME", saved_home.c_str(), 1);
}

}  // namespace
}  // namespace attn::data
