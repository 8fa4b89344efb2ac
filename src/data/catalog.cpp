#include "attn/data/catalog.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "attn/data/cmudict_npm.h"
#include "attn/error.h"
#include "attn/io/archive.h"
#include "attn/io/atomic_file.h"
#include "attn/io/download.h"
#include "attn/io/input_file.h"
#include "attn/io/sha256.h"

namespace attn::data {
namespace fs = std::filesystem;
namespace {

// Content lengths and SHA-256 measured on ../shared/data (each .gz decompressed), which is
// what attn's results in docs/ were measured on; each set's SOURCE.md there states the same
// figures for the upstream files.
const CatalogFile k_cmudict[] = {
    {"LICENSE.npm-package", "", 768, "91e895a27ad580d04ab7b2e14774756c684bf341f4e3bd8b488e9fd612b709e6"},
    {"cmudict.dict.gz", "", 3753245, "88b145977a0afff37274d94cbb02754232054082bf633f4cfae42a390c114b60"},
};
const CatalogFile k_multi30k[] = {
    {"README.upstream.md", "README.md", 4509, "d85366a011c276342f99bcd1fe32ca126e0295914413f7bf45201972f241818c"},
    {"raw/test_2016_flickr.cs.gz", "data/task1/raw/test_2016_flickr.cs.gz", 62364,
     "45adb85f688de8407fddcbe1b36dca15d12aab868149b337e2576f2d6d2ff8d8"},
    {"raw/test_2016_flickr.de.gz", "data/task1/raw/test_2016_flickr.de.gz", 70649,
     "4be6b5b3236b79c25475c6bb829800a7ce559e9ba7a1f6c2394fe4d40be46d16"},
    {"raw/test_2016_flickr.en.gz", "data/task1/raw/test_2016_flickr.en.gz", 62076,
     "399a4382932c1aadd3ceb9bef1008d388a64c76d4ae4e9d4728c6f4301cac182"},
    {"raw/test_2016_flickr.fr.gz", "data/task1/raw/test_2016_flickr.fr.gz", 72261,
     "cb3160d69b002bb638e66cc7612fcd56cb0af82eadc9c142dedc438afb885ef6"},
    {"raw/test_2017_flickr.de.gz", "data/task1/raw/test_2017_flickr.de.gz", 64059,
     "c3078bc3b36808bf9d20eb2347ed6137016179ef59ec0d2b9b8ecc3fb2880081"},
    {"raw/test_2017_flickr.en.gz", "data/task1/raw/test_2017_flickr.en.gz", 55242,
     "ce1450ddc5ab0834502579d77a170849952e15a2938b34cc503bdc25ebb4fb98"},
    {"raw/test_2017_flickr.fr.gz", "data/task1/raw/test_2017_flickr.fr.gz", 65691,
     "6f3764e31dac41e9455e612958bcfd4e877c5e15cd66df2c2b2be6d9bd83e5b6"},
    {"raw/test_2017_mscoco.de.gz", "data/task1/raw/test_2017_mscoco.de.gz", 29906,
     "58277df3c75f92f7145a11b910b553d1cf82c439249d4dc237c899609eafac22"},
    {"raw/test_2017_mscoco.en.gz", "data/task1/raw/test_2017_mscoco.en.gz", 24949,
     "43051fdfa86fd5395182e718a94ca67b1b227b9f7c79596ff0f6b813216981d2"},
    {"raw/test_2017_mscoco.fr.gz", "data/task1/raw/test_2017_mscoco.fr.gz", 29982,
     "39cde3f43f32b0a6bf29ce4917a46329ff32e53070c2fac87506695a740ae0a0"},
    {"raw/test_2018_flickr.cs.gz", "data/task1/raw/test_2018_flickr.cs.gz", 69775,
     "1db59fe6980c9b3f9bade65122a985e71150214837d76f4768a5a8384c0b2dc7"},
    {"raw/test_2018_flickr.de.gz", "data/task1/raw/test_2018_flickr.de.gz", 80893,
     "39fcc8b3331d76fb42d648d019c6898b0d5e58baac87bc2a0bb93f44ec8db207"},
    {"raw/test_2018_flickr.en.gz", "data/task1/raw/test_2018_flickr.en.gz", 70603,
     "4e585c2dd525911a6ea7730e9d0b516239af3f1b1ffae6a2130223cfb639f25e"},
    {"raw/test_2018_flickr.fr.gz", "data/task1/raw/test_2018_flickr.fr.gz", 84076,
     "234b4a887da0da4801a3e2c6f21336231ff7dd46daeb80cfa1b551c8bbb78239"},
    {"raw/train.cs.gz", "data/task1/raw/train.cs.gz", 1755283,
     "2be68b38c8d586ff4f54eb13cc6e1baaaa053695b3f070d3038303a47f2268da"},
    {"raw/train.de.gz", "data/task1/raw/train.de.gz", 2110398,
     "2c2b73fd2b548fbcde3a875e0a78d6ee94d498bfdee6bd3eae3945779e9ddf72"},
    {"raw/train.en.gz", "data/task1/raw/train.en.gz", 1801238,
     "460a15fbd157e34a7a9957ee388c1ca247fe47af3ef25fb50442af6c274e0fc6"},
    {"raw/train.fr.gz", "data/task1/raw/train.fr.gz", 2111303,
     "5925a3c18f1587b6b54b87743106e6e8ab93618edb6f65d19eac0621f853a10d"},
    {"raw/val.cs.gz", "data/task1/raw/val.cs.gz", 60213,
     "d53827e469b0a1ca8d57e9e26b2b64c4bc4b33f5479c7b03ae87ae5c882c3e33"},
    {"raw/val.de.gz", "data/task1/raw/val.de.gz", 75981,
     "660e09eb7e1da2f856ea13ee5ad3cf6d36b3d5b0b733c857e94c5747a3dfc660"},
    {"raw/val.en.gz", "data/task1/raw/val.en.gz", 63297,
     "1f2a23d992769b5b3d209b0a10dd0b77c08cceb1f20dfb97ed0aafa49d107227"},
    {"raw/val.fr.gz", "data/task1/raw/val.fr.gz", 73924,
     "5304e444d842e962b2dda4d816b70b22a1765b15401642b7ca37a67477e708dc"},
    {"tok/test_2016_flickr.lc.norm.tok.cs.gz", "data/task1/tok/test_2016_flickr.lc.norm.tok.cs", 63566,
     "748c8816de928732365176e5c5d2f9bbabcec9b8d4448fba2d230feb057898a7"},
    {"tok/test_2016_flickr.lc.norm.tok.de.gz", "data/task1/tok/test_2016_flickr.lc.norm.tok.de", 71917,
     "c6a33d39d48f9f510de147651316cd9d918e09ad0219df734a2f16b6baccacc4"},
    {"tok/test_2016_flickr.lc.norm.tok.en.gz", "data/task1/tok/test_2016_flickr.lc.norm.tok.en", 63307,
     "5b7f32627cf99eced828311b955dae9800bb52bc8b91cf8b6526829e605b29d2"},
    {"tok/test_2016_flickr.lc.norm.tok.fr.gz", "data/task1/tok/test_2016_flickr.lc.norm.tok.fr", 76394,
     "1463bd5960f9bfe098ec3cd752d3df0c49c84dc646fb518964a29232658cd836"},
    {"tok/test_2017_flickr.lc.norm.tok.de.gz", "data/task1/tok/test_2017_flickr.lc.norm.tok.de", 65228,
     "02067e4a9402786a4fcb8c1b6f4307e4a5073ced64800abead5273b54f5f31f6"},
    {"tok/test_2017_flickr.lc.norm.tok.en.gz", "data/task1/tok/test_2017_flickr.lc.norm.tok.en", 56123,
     "c9d1dfd7a26add989382e534af235af9f0f658b2a30e7eb0efdaf142496ee54f"},
    {"tok/test_2017_flickr.lc.norm.tok.fr.gz", "data/task1/tok/test_2017_flickr.lc.norm.tok.fr", 69537,
     "c0583117a47b31e8a6c6a97cfe8de153e462074668f4e994764fcc80b21d33b4"},
    {"tok/test_2017_mscoco.lc.norm.tok.de.gz", "data/task1/tok/test_2017_mscoco.lc.norm.tok.de", 30464,
     "e2825990b8a4e5289d2cdba801d57c187810bab9b4f5d87a30c35800a0d871b6"},
    {"tok/test_2017_mscoco.lc.norm.tok.en.gz", "data/task1/tok/test_2017_mscoco.lc.norm.tok.en", 25380,
     "fe69ae004d71c42ead0301e70c57de5b1b6b5fb7f52210d42b22801e98e656f3"},
    {"tok/test_2017_mscoco.lc.norm.tok.fr.gz", "data/task1/tok/test_2017_mscoco.lc.norm.tok.fr", 31725,
     "0b6a4620f02b6b9acf7811fda23f90fed9c6baa0b96aa224db50a273078c84d1"},
    {"tok/test_2018_flickr.lc.norm.tok.cs.gz", "data/task1/tok/test_2018_flickr.lc.norm.tok.cs", 70515,
     "09a4987a524dea4852ccfef35329281b2cd577780691b732341ccecc4015aa4c"},
    {"tok/test_2018_flickr.lc.norm.tok.de.gz", "data/task1/tok/test_2018_flickr.lc.norm.tok.de", 82274,
     "45ce6b121708adf538d3a8c71dc1acbcb1e0f2bca74ace8e58652f9ea5b96335"},
    {"tok/test_2018_flickr.lc.norm.tok.en.gz", "data/task1/tok/test_2018_flickr.lc.norm.tok.en", 71617,
     "a66e25cbb8323d74a40873dcd222659f39e30ee7687a6ed5445833aed0673239"},
    {"tok/test_2018_flickr.lc.norm.tok.fr.gz", "data/task1/tok/test_2018_flickr.lc.norm.tok.fr", 90128,
     "22d44a4ba21e050f218399f2c4f9e1a36875f209820c1f1c9af5b76a2947a71c"},
    {"tok/train.lc.norm.tok.cs.gz", "data/task1/tok/train.lc.norm.tok.cs", 1791955,
     "7645fb91efa18f94c83d493f740a5d5a941e4b01efa6a124bf2d4af040e133e0"},
    {"tok/train.lc.norm.tok.de.gz", "data/task1/tok/train.lc.norm.tok.de", 2150008,
     "cb5a23529b65ec2061f1dc446192a9c37382b63cc75f81a0be59d34894b3a505"},
    {"tok/train.lc.norm.tok.en.gz", "data/task1/tok/train.lc.norm.tok.en", 1837696,
     "08925f8e0572bcd5a006702fc5fe20e2d77c6917d4eebd576fc20de6693c2119"},
    {"tok/train.lc.norm.tok.fr.gz", "data/task1/tok/train.lc.norm.tok.fr", 2235588,
     "8fa41bb718412bcb7c5dfa58603842810a01543eae86a51279f9886b901266e1"},
    {"tok/val.lc.norm.tok.cs.gz", "data/task1/tok/val.lc.norm.tok.cs", 61492,
     "b87ee4917f4a0f9ca6cca03e402026c9f4437dc1bd6a7dadfd2544ecfb6c5501"},
    {"tok/val.lc.norm.tok.de.gz", "data/task1/tok/val.lc.norm.tok.de", 77273,
     "97232bd273eceb7207f689527386a97e4be2616b18ada47576bdaf96c8ae1f00"},
    {"tok/val.lc.norm.tok.en.gz", "data/task1/tok/val.lc.norm.tok.en", 64608,
     "46573ce391ae227f1c72f873392436a20ef18e0a6d518098cfbd70b77c8572ec"},
    {"tok/val.lc.norm.tok.fr.gz", "data/task1/tok/val.lc.norm.tok.fr", 78242,
     "b303e301aa21fe7822a846b2b3fb2d5a1121ec807cd5b1d006fb7b2b5507168a"},
};
const CatalogFile k_sst2[] = {
    {"LICENSE.upstream", "LICENSE", 1068, "760536b10e1f4298ae221a66fa257a5b1c4e571a2cb4594e90f848ebfff0b205"},
    {"README.upstream.md", "README.md", 2383, "cbe1eafe9c17abc5c33d8d3888d8f959d30ce2f7a7937d0186a4c7a271f27505"},
    {"sentiment-dev", "data/sentiment-dev", 94916, "9a6c7403b71a9b762158387afe4431253ae10cdfb2319b5275289f3766f48291"},
    {"sentiment-test", "data/sentiment-test", 194788,
     "4fefd1cd67526cf87ebc7fafc3afc21cc7cfa6ae53b45e74f77f9456e3c62752"},
    {"sentiment-train.gz", "data/sentiment-train", 3806066,
     "10a92a297ec38e262386e5a2713b4bc70e5d18ced88b7f54bd171a26e5b34ab5"},
};
const CatalogFile k_tatoeba_fra_eng[] = {
    {"_about.txt", "", 1441, "359011f5738272138286287b44db215d184823911eb049da2160a6ac6933d6c9"},
    {"fra.txt.gz", "", 10009515, "2546838ae46e0eac4c02ab7032ea0a02a006074a5340077a36a9444f41e02888"},
};

// The sets whose upstream is one archive: its length and SHA-256 as the upstream serves it
// (tatoeba-fra-eng: ../shared/data/tatoeba-fra-eng/SOURCE.md; cmudict: measured on the tarball
// that `npm pack cmu-pronouncing-dictionary@3.0.0` fetched on 2026-12-03, whose SHA-1 and
// SHA-512 are the registry's `dist.shasum` and `dist.integrity`). The unpackers are below.
void unpack_tatoeba_fra_eng(const std::string& archive, const std::string& folder);
void unpack_cmudict(const std::string& archive, const std::string& folder);
const CatalogArchive k_tatoeba_fra_eng_zip = {
    "https://raw.githubusercontent.com/genimind/seq2seq/4f3f8eb0adde54fcc8b89394336b002e7961244c/fra-eng.zip",
    "fra-eng.zip", 2951390, "16c4f7d0df9e7c5e6c54cdb0447f3f4a18a55052ff5e2e0b27dd4a06c0e49d04", unpack_tatoeba_fra_eng};
const CatalogArchive k_cmudict_tgz = {
    "https://registry.npmjs.org/cmu-pronouncing-dictionary/-/cmu-pronouncing-dictionary-3.0.0.tgz",
    "cmu-pronouncing-dictionary-3.0.0.tgz", 950120, "ca16ac157e95277ffe1ca105a5ca2c833a15626024f15711c2a425da367b68ce",
    unpack_cmudict};

// The pretrained word vectors of `--embeddings` (docs/data.md). Their publishers give
// no checksum and none could be measured here (no internet), so none is pinned: attn names
// the URL and refuses to install them rather than install bytes it cannot check.
const CatalogFile k_glove_6b[] = {{"glove.6B.zip", "glove.6B.zip", 0, ""}};
const CatalogFile k_glove_840b[] = {{"glove.840B.300d.zip", "glove.840B.300d.zip", 0, ""}};
const CatalogFile k_fasttext_wiki_news[] = {{"wiki-news-300d-1M.vec.zip", "wiki-news-300d-1M.vec.zip", 0, ""}};
const CatalogFile k_fasttext_crawl[] = {{"crawl-300d-2M.vec.zip", "crawl-300d-2M.vec.zip", 0, ""}};

constexpr const char* kVectorsNote =
    "no SHA-256 is pinned for it (the publisher gives none and attn could not measure one), so attn does not install "
    "it: download the URL yourself, unzip it and pass the .txt / .vec file to --embeddings (docs/data.md)";

const CatalogEntry kCatalog[] = {
    {"sst2", "SST-2, the binary Stanford Sentiment Treebank (GLUE's split, test labels included)",
     "https://raw.githubusercontent.com/PrincetonML/SIF/84b5b4c1c1ca20b6af19fc78cae005a1818ec571/",
     "github.com/PrincetonML/SIF at commit 84b5b4c1c1ca20b6af19fc78cae005a1818ec571, data/ (GLUE SST-2 train/dev "
     "without the header line; the standard labelled test set)",
     "MIT (the SIF repository); the text is the Stanford Sentiment Treebank's (Socher et al. 2013)", "", k_sst2,
     nullptr},
    {"multi30k", "Multi30k task 1: image captions in English, German, French and Czech",
     "https://raw.githubusercontent.com/multi30k/dataset/a3d2e0d26b56f3846f66a952536ffed4e401d05a/",
     "github.com/multi30k/dataset at commit a3d2e0d26b56f3846f66a952536ffed4e401d05a, data/task1/raw and tok",
     "no licence file; research and educational use (the repository's README)", "", k_multi30k, nullptr},
    {"tatoeba-fra-eng", "Tatoeba / manythings.org English-French sentence pairs (2017-09-29 release)", "",
     "fra-eng.zip in github.com/genimind/seq2seq at commit 4f3f8eb0adde54fcc8b89394336b002e7961244c",
     "CC BY 2.0 (FR), attribution to tatoeba.org and manythings.org", "", k_tatoeba_fra_eng, &k_tatoeba_fra_eng_zip},
    {"cmudict", "CMUdict, the CMU Pronouncing Dictionary (135,155 entries)", "",
     "index.js of the npm package cmu-pronouncing-dictionary 3.0.0, written one entry a line",
     "BSD-style (cmusphinx/cmudict); the npm package's code is ISC", "", k_cmudict, &k_cmudict_tgz},
    {"glove-6b", "GloVe 6B (Wikipedia 2014 + Gigaword 5; 50, 100, 200 and 300 dimensions), 822 MB zip",
     "https://nlp.stanford.edu/data/", "nlp.stanford.edu/projects/glove", "ODC Public Domain Dedication and License",
     kVectorsNote, k_glove_6b, nullptr},
    {"glove-840b", "GloVe 840B (Common Crawl, cased, 300 dimensions), 2.0 GB zip", "https://nlp.stanford.edu/data/",
     "nlp.stanford.edu/projects/glove", "ODC Public Domain Dedication and License", kVectorsNote, k_glove_840b,
     nullptr},
    {"fasttext-wiki-news-300d",
     "fastText wiki-news-300d-1M (Wikipedia 2017, UMBC, statmt news; 1M words, 300 dimensions)",
     "https://dl.fbaipublicfiles.com/fasttext/vectors-english/", "fasttext.cc/docs/en/english-vectors.html",
     "CC BY-SA 3.0", kVectorsNote, k_fasttext_wiki_news, nullptr},
    {"fasttext-crawl-300d", "fastText crawl-300d-2M (Common Crawl; 2M words, 300 dimensions)",
     "https://dl.fbaipublicfiles.com/fasttext/vectors-english/", "fasttext.cc/docs/en/english-vectors.html",
     "CC BY-SA 3.0", kVectorsNote, k_fasttext_crawl, nullptr},
};

bool pinned(const CatalogEntry& e) {
  for (const CatalogFile& f : e.files)
    if (f.sha256[0] == '\0') return false;
  return true;
}

// An exclusive lock on DIR/.lock for the life of the object; a second holder is refused.
class FolderLock {
 public:
  explicit FolderLock(const fs::path& dir) {
    const std::string path = (dir / ".lock").string();
    fd_ = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd_ < 0) throw IoError(path + ": cannot open: " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      ::close(fd_);
      if (error == EWOULDBLOCK)
        throw IoError("another attn data get is installing into " + dir.string() + " (it holds " + path +
                      "); wait for it to finish, or use another --to");
      throw IoError(path + ": cannot lock: " + std::strerror(error));
    }
  }
  ~FolderLock() { ::close(fd_); }
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

// `bytes` gzip-compressed into `to` (written atomically).
void write_gzip(const std::string& to, std::string_view bytes) {
  io::AtomicFile out(to);
  std::unique_ptr<gzFile_s, int (*)(gzFile)> gz(gzopen(out.write_path().c_str(), "wb9"), gzclose);
  if (!gz) throw IoError(to + ": cannot write");
  for (size_t at = 0; at < bytes.size();) {
    const unsigned n = static_cast<unsigned>(std::min<size_t>(bytes.size() - at, 1 << 20));
    if (gzwrite(gz.get(), bytes.data() + at, n) != static_cast<int>(n))
      throw IoError(to + ": cannot write (disk full?)");
    at += n;
  }
  if (gzclose(gz.release()) != Z_OK) throw IoError(to + ": cannot write (disk full?)");
  out.commit();
}

// The largest file of a set (Tatoeba's fra.txt, 10 MB) with room to spare: more from an
// archive member or a plain download to compress is not a data set attn knows.
constexpr int64_t kMaxFileBytes = int64_t{64} << 20;

// The upstream zip holds fra.txt and _about.txt: fra.txt is installed gzip-compressed, as
// ../shared/data keeps it (the readers take either).
void unpack_tatoeba_fra_eng(const std::string& archive, const std::string& folder) {
  auto members = io::read_archive_members(archive, {"fra.txt", "_about.txt"}, kMaxFileBytes);
  io::write_file_atomically(folder + "/_about.txt", members.at("_about.txt"));
  write_gzip(folder + "/fra.txt.gz", members.at("fra.txt"));
}

// The npm package's index.js, written one entry a line (data/cmudict.h), and its licence.
void unpack_cmudict(const std::string& archive, const std::string& folder) {
  auto members = io::read_archive_members(archive, {"package/index.js", "package/license"}, kMaxFileBytes);
  const std::string lines = cmudict_lines_from_npm_module(members.at("package/index.js"));
  io::write_file_atomically(folder + "/LICENSE.npm-package", members.at("package/license"));
  write_gzip(folder + "/cmudict.dict.gz", lines);
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", &tm);
  return text;
}

// `archive`: "" or a line on the archive the files were unpacked from.
std::string source_record(const CatalogEntry& e, const std::string& from, const std::string& archive) {
  std::string md = std::string("# ") + e.name + " — source record (written by `attn data get`)\n\n" + e.title + ".\n\n";
  md += std::string("- Origin: ") + e.origin + "\n- Licence: " + e.license + "\n- Fetched " + utc_now() + " from " +
        from + "\n" + archive + "\n";
  md +=
      "Every file's content (decompressed for a .gz) has the length and SHA-256 that attn pins in "
      "src/data/catalog.cpp; `attn data list` checks them again.\n\n| file | content bytes | content sha256 "
      "|\n|---|---|---|\n";
  for (const CatalogFile& f : e.files)
    md += std::string("| `") + f.path + "` | " + std::to_string(f.bytes) + " | `" + f.sha256 + "` |\n";
  return md;
}

// Checks a fetched file's content against the pin; the file is deleted when it does not match.
void check_fetched(const CatalogEntry& e, const CatalogFile& f, const std::string& part, const std::string& from) {
  const std::string what = std::string(e.name) + "/" + f.path;
  io::ContentDigest d;
  try {
    d = io::content_sha256(part);
  } catch (const IoError& error) {
    fs::remove(part);
    throw ValueError(what + " from " + from + ": " + error.what() + "; nothing installed");
  }
  if (d.bytes != f.bytes) {
    fs::remove(part);
    throw ValueError(what + " from " + from + ": wrong length: expected " + std::to_string(f.bytes) +
                     " bytes of content, got " + std::to_string(d.bytes) + "; nothing installed");
  }
  if (d.sha256 != f.sha256) {
    fs::remove(part);
    throw ValueError(what + " from " + from + ": sha256 mismatch: expected " + f.sha256 + ", got " + d.sha256 +
                     "; nothing installed");
  }
}

// MIRROR/NAME/FILE: a URL, or a path when the mirror is a folder.
std::string mirror_path(const std::string& mirror, const std::string& name, const std::string& file) {
  std::string base = mirror;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  return base + "/" + name + "/" + file;
}

// Where file `f` of set `e` comes from: a URL, or a local path when the mirror is a folder.
std::string source_of(const CatalogEntry& e, const CatalogFile& f, const std::string& mirror) {
  if (mirror.empty()) {
    if (e.upstream[0] == '\0' || f.upstream[0] == '\0') throw ValueError(std::string(e.name) + ": " + e.note);
    return std::string(e.upstream) + f.upstream;
  }
  return mirror_path(mirror, e.name, f.path);
}

// `from` (a URL, or a file of a folder mirror) into `part`, continuing a part an earlier run left.
void transfer(const std::string& from, const std::string& part, const std::string& label, const GetOptions& o) {
  if (!o.mirror.empty() && !io::is_url(o.mirror)) {
    if (!fs::is_regular_file(from)) throw IoError(from + ": no such file in the mirror");
    io::copy_file_atomically(from, part);
    return;
  }
  io::DownloadOptions d;
  d.stall_seconds = o.stall_seconds;
  d.stop = o.stop;
  if (o.progress_of) d.progress = [&](int64_t done, int64_t total) { o.progress_of(label, done, total); };
  const io::DownloadResult r = io::download(from, part, d);
  if (o.progress_of) o.progress_of("", 0, 0);  // the end of this file's bar
  if (r.resumed_from > 0 && o.say) o.say("  resumed after " + std::to_string(r.resumed_from) + " bytes");
}

void fetch_file(const CatalogEntry& e, const CatalogFile& f, const fs::path& stage, const GetOptions& o) {
  const fs::path final_path = stage / f.path;
  fs::create_directories(final_path.parent_path());
  if (fs::exists(final_path)) {
    try {
      const io::ContentDigest d = io::content_sha256(final_path.string());
      if (d.bytes == f.bytes && d.sha256 == f.sha256) return;  // fetched by an earlier run
    } catch (const IoError&) {
    }
    fs::remove(final_path);
  }
  const std::string part = final_path.string() + ".part";
  const std::string from = source_of(e, f, o.mirror);
  if (o.say) o.say(std::string(e.name) + "/" + f.path + " from " + from);
  transfer(from, part, std::string(e.name) + "/" + f.path, o);
  check_fetched(e, f, part, from);
  if (std::string_view(f.path).ends_with(".gz") && !io::content_sha256(part).gzip) {
    write_gzip(final_path.string(), io::read_regular_file(part, kMaxFileBytes));
    fs::remove(part);
  } else {
    fs::rename(part, final_path);
  }
}

// Whether set `e` comes from its archive: always from the upstream, and from a mirror that
// holds MIRROR/NAME/<archive file> (laid out like the upstream) rather than the files.
bool from_archive(const CatalogEntry& e, const GetOptions& o) {
  if (e.archive == nullptr) return false;
  if (o.mirror.empty()) return true;
  const std::string path = mirror_path(o.mirror, e.name, e.archive->file);
  return io::is_url(o.mirror) ? io::url_exists(path, o.stall_seconds) : fs::is_regular_file(path);
}

// The archive of `e`, fetched into DIR/.partial/NAME-<file> (continuing a part an earlier run
// left) and checked against its pin: the upstream's, or with a mirror the test pin of
// GetOptions::test_archive_sha256. ValueError for a length or checksum mismatch (the bad
// download is deleted). Returns its path and, in `pin`, the SHA-256 it was checked against.
std::string fetch_archive(const CatalogEntry& e, const fs::path& to, const GetOptions& o, std::string& pin) {
  const CatalogArchive& a = *e.archive;
  pin = a.sha256;
  int64_t bytes = a.bytes;
  if (const auto test = o.test_archive_sha256.find(e.name); !o.mirror.empty() && test != o.test_archive_sha256.end()) {
    pin = test->second;
    bytes = -1;  // the test's archive has its own length; its checksum is checked all the same
  }
  const std::string path = (to / ".partial" / (std::string(e.name) + "-" + a.file)).string();
  if (fs::is_regular_file(path) && io::file_sha256(path) == pin) return path;  // fetched by an earlier run
  const std::string part = path + ".part";
  const std::string from = o.mirror.empty() ? a.url : mirror_path(o.mirror, e.name, a.file);
  if (o.say) o.say(std::string(e.name) + "/" + a.file + " from " + from);
  transfer(from, part, std::string(e.name) + "/" + a.file, o);
  const std::string what = std::string(e.name) + "/" + a.file + " from " + from;
  const int64_t got = static_cast<int64_t>(fs::file_size(part));
  if (bytes >= 0 && got != bytes) {
    fs::remove(part);
    throw ValueError(what + ": wrong length: expected " + std::to_string(bytes) + " bytes, got " + std::to_string(got) +
                     "; nothing installed");
  }
  if (const std::string sha = io::file_sha256(part); sha != pin) {
    fs::remove(part);
    throw ValueError(what + ": sha256 mismatch: expected " + pin + ", got " + sha + "; nothing installed");
  }
  fs::rename(part, path);
  return path;
}

// Set `e` made from its archive into `stage`, every file checked against its pin. On failure
// the archive is deleted (it verified, yet does not give the pinned files) and nothing is left
// in `stage`. Returns the SOURCE.md line on the archive.
std::string unpack_archive(const CatalogEntry& e, const fs::path& to, const fs::path& stage, const GetOptions& o) {
  std::string pin;
  const std::string archive = fetch_archive(e, to, o, pin);
  if (o.say) o.say(std::string(e.name) + ": unpacking " + e.archive->file);
  fs::remove_all(stage);  // whatever an earlier run left there
  fs::create_directories(stage);
  try {
    e.archive->unpack(archive, stage.string());
    for (const CatalogFile& f : e.files) check_fetched(e, f, (stage / f.path).string(), e.archive->file);
  } catch (const Error&) {
    fs::remove_all(stage);
    fs::remove(archive);
    throw;
  }
  fs::remove(archive);
  return std::string("- Unpacked from ") + e.archive->file + " (sha256 `" + pin + "`" +
         (pin == e.archive->sha256 ? ", the upstream's" : ", a test archive: not the upstream's") + ")\n";
}

void sync_folder(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

}  // namespace

std::span<const CatalogEntry> catalog() { return kCatalog; }

std::string catalog_names() {
  std::string names;
  for (const CatalogEntry& e : kCatalog) names += (names.empty() ? "" : ", ") + std::string(e.name);
  return names;
}

const CatalogEntry& catalog_entry(const std::string& name) {
  for (const CatalogEntry& e : kCatalog)
    if (name == e.name) return e;
  throw ValueError("unknown data set '" + name + "' (known: " + catalog_names() + ")");
}

std::string data_home() {
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg) return (fs::path(xdg) / "attn").string();
  if (const char* home = std::getenv("HOME"); home && *home) return (fs::path(home) / ".local/share/attn").string();
  return "";
}

VerifyResult verify_data_set(const CatalogEntry& e, const std::string& folder) {
  VerifyResult r;
  for (const CatalogFile& f : e.files) {
    const fs::path path = fs::path(folder) / f.path;
    if (!fs::exists(path)) {
      r.problem = path.string() + " is missing";
      return r;
    }
  }
  r.complete = true;
  for (const CatalogFile& f : e.files) {
    const fs::path path = fs::path(folder) / f.path;
    try {
      const io::ContentDigest d = io::content_sha256(path.string());
      if (d.bytes != f.bytes || d.sha256 != f.sha256) {
        r.problem = path.string() + ": content sha256 " + d.sha256 + " (" + std::to_string(d.bytes) +
                    " bytes), pinned " + f.sha256 + " (" + std::to_string(f.bytes) + " bytes)";
        return r;
      }
    } catch (const IoError& error) {
      r.problem = error.what();
      return r;
    }
  }
  r.verifies = pinned(e);
  if (!r.verifies) r.problem = "no checksum pinned";
  return r;
}

std::string get_data_set(const std::string& name, const GetOptions& o) {
  const CatalogEntry& e = catalog_entry(name);
  if (!pinned(e)) throw ValueError(std::string(e.name) + ": " + e.note + "; URL: " + e.upstream + e.files[0].upstream);
  if (o.mirror.empty() && e.upstream[0] == '\0' && e.archive == nullptr)
    throw ValueError(std::string(e.name) + ": " + e.note);
  const fs::path to = o.to.empty() ? fs::path(data_home()) : fs::path(o.to);
  if (to.empty()) throw ValueError("no data folder: HOME and XDG_DATA_HOME are unset; give --to DIR");
  fs::create_directories(to);
  FolderLock lock(to);
  const fs::path installed = to / e.name;
  if (fs::is_directory(installed) && verify_data_set(e, installed.string()).verifies) {
    if (o.say) o.say(std::string(e.name) + ": already installed in " + installed.string() + " and verifies");
    return installed.string();
  }
  // Files go to DIR/.partial/NAME/ first: a failure there leaves DIR/NAME as it was, and the
  // next run resumes from what arrived.
  const fs::path stage = to / ".partial" / e.name;
  fs::create_directories(stage);
  std::string archive_line, from = o.mirror.empty() ? std::string(e.upstream) : o.mirror + " (a mirror)";
  if (from_archive(e, o)) {
    archive_line = unpack_archive(e, to, stage, o);
    if (o.mirror.empty()) from = e.archive->url;
  } else {
    for (const CatalogFile& f : e.files) fetch_file(e, f, stage, o);
  }
  io::write_file_atomically((stage / "SOURCE.md").string(), source_record(e, from, archive_line));
  // Into place by renames: an old copy (incomplete or not verifying) is moved aside first.
  const fs::path old = to / ".partial" / (std::string(e.name) + ".old");
  fs::remove_all(old);
  if (fs::exists(installed)) fs::rename(installed, old);
  fs::rename(stage, installed);
  sync_folder(to);
  fs::remove_all(old);
  return installed.string();
}

DataLookup find_data(const std::string& set) {
  DataLookup r;
  const std::string home = data_home();
  const std::string shared = "../shared/data";
  r.looked = (home.empty() ? std::string() : home + ", ") + shared;
  if (!home.empty() && fs::is_directory(fs::path(home) / set)) {
    r.path = home;
    r.chosen = "data: using " + home + " (attn data get's folder; --data DIR chooses another)";
  } else if (fs::is_directory(fs::path(shared) / set)) {
    r.path = shared;
    r.chosen = "data: using " + shared + " (no " + set + "/ in " + (home.empty() ? "the data home" : home) +
               "; --data DIR chooses another)";
  }
  return r;
}

}  // namespace attn::data
