// The spoken-sentence feature cache: reading and writing the .speech file (attn/data/speech.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>
#include <unordered_set>

#include "attn/data/speech.h"
#include "attn/data/text.h"
#include "attn/error.h"
#include "attn/io/atomic_file.h"
#include "attn/io/input_file.h"
#include "attn/printable.h"

namespace attn::data {
namespace {

constexpr std::string_view kMagic = "ATTNSPCH";
constexpr uint32_t kEncodingFp16 = 1;
constexpr float kFp16Max = 65504.0f;
constexpr size_t kMaxFileBytes = size_t{1} << 40;  // 1 TiB: the reader holds the file in memory

// fp16 <-> float through the compiler's _Float16 (IEEE binary16, round to nearest even).
uint16_t to_fp16(float x) {
  const _Float16 h = static_cast<_Float16>(x);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

float from_fp16(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return static_cast<float>(h);
}

bool fp16_finite(uint16_t bits) { return (bits & 0x7c00u) != 0x7c00u; }  // exponent all ones: inf or NaN

class Writer {
 public:
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes_.push_back(static_cast<char>((v >> (8 * i)) & 0xffu));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes_.push_back(static_cast<char>((v >> (8 * i)) & 0xffu));
  }
  void text(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    bytes_.append(s);
  }
  void raw(std::string_view s) { bytes_.append(s); }
  void fp16(float x) {
    const uint16_t h = to_fp16(x);
    bytes_.push_back(static_cast<char>(h & 0xffu));
    bytes_.push_back(static_cast<char>(h >> 8));
  }
  // Hands the bytes gathered so far to `file` and starts again.
  void flush(io::AtomicFile& file) {
    file.write(bytes_);
    bytes_.clear();
  }

 private:
  std::string bytes_;
};

// Reads the file's bytes front to back; every read is checked against what remains.
class Reader {
 public:
  Reader(std::string_view bytes, const std::string& file) : bytes_(bytes), file_(file) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw ValueError(fmt::format("{}: {}", printable(file_, false, 200), what));
  }
  size_t remaining() const { return bytes_.size() - at_; }
  std::string_view take(size_t n, const std::string& what) {
    if (n > remaining())
      fail(fmt::format("{} needs {} bytes at offset {}, only {} remain (truncated?)", what, n, at_, remaining()));
    const std::string_view out = bytes_.substr(at_, n);
    at_ += n;
    return out;
  }
  uint64_t uint(int width, const std::string& what) {
    const std::string_view b = take(static_cast<size_t>(width), what);
    uint64_t v = 0;
    for (int i = width - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[static_cast<size_t>(i)]);
    return v;
  }
  uint32_t u32(const std::string& what) { return static_cast<uint32_t>(uint(4, what)); }
  uint64_t u64(const std::string& what) { return uint(8, what); }
  // A length-prefixed UTF-8 string.
  std::string text(const std::string& what) {
    const uint32_t n = u32(what + "'s length");
    std::string s(take(n, what));
    if (valid_utf8(s) != s) fail(what + " is not valid UTF-8");
    return s;
  }

 private:
  std::string_view bytes_;
  std::string file_;
  size_t at_ = 0;
};

void check_set(const SpeechSet& set, const std::string& file) {
  auto fail = [&](const std::string& what) {
    throw ValueError(fmt::format("write_speech_set {}: {}", printable(file, false, 200), what));
  };
  if (set.bins < 1 || set.bins > kSpeechSetMaxBins)
    fail(fmt::format("bins must be in 1..{}, got {}", kSpeechSetMaxBins, set.bins));
  if (set.provenance.size() > std::numeric_limits<uint32_t>::max()) fail("the provenance is longer than 4 GiB");
  std::unordered_set<std::string> ids;
  for (size_t u = 0; u < set.utterances.size(); ++u) {
    const SpeechUtterance& utt = set.utterances[u];
    const std::string name = fmt::format("utterance {} ('{}')", u, printable(utt.id, false, 80));
    if (utt.id.empty()) fail(fmt::format("utterance {} has an empty id", u));
    if (!ids.insert(utt.id).second) fail(name + ": the id is used twice");
    for (const std::string* s : {&utt.id, &utt.voice, &utt.text})
      if (s->size() > std::numeric_limits<uint32_t>::max()) fail(name + ": a string longer than 4 GiB");
    if (utt.frames < 0 || utt.frames > std::numeric_limits<uint32_t>::max())
      fail(fmt::format("{}: frames must be in 0..2^32-1, got {}", name, utt.frames));
    if (static_cast<int64_t>(utt.features.size()) != utt.frames * set.bins)
      fail(fmt::format("{}: features (frames={}, bins={}) expected {} values, got {}", name, utt.frames, set.bins,
                       utt.frames * set.bins, utt.features.size()));
    for (size_t i = 0; i < utt.features.size(); ++i) {
      const float x = utt.features[i];
      if (!std::isfinite(x) || std::fabs(x) > kFp16Max)
        fail(fmt::format("{}: feature at frame {}, bin {} is {}; the file holds finite values within fp16's +-65504",
                         name, i / static_cast<size_t>(set.bins), i % static_cast<size_t>(set.bins), x));
    }
  }
}

}  // namespace

SpeechSet read_speech_set(const std::filesystem::path& file) {
  const std::string path = file.string();
  const std::string bytes = io::read_regular_file(path, kMaxFileBytes);
  Reader in(bytes, path);
  if (bytes.size() < kMagic.size() || std::string_view(bytes).substr(0, kMagic.size()) != kMagic)
    in.fail("not an attn speech set (the file does not start with \"ATTNSPCH\")");
  in.take(kMagic.size(), "the magic");
  const uint32_t version = in.u32("the version");
  if (version != kSpeechSetVersion)
    in.fail(fmt::format("format version {}; this attn reads version {} (rebuild it with attn data speech)", version,
                        kSpeechSetVersion));
  SpeechSet set;
  const uint32_t bins = in.u32("the number of bins");
  if (bins < 1 || bins > static_cast<uint32_t>(kSpeechSetMaxBins))
    in.fail(fmt::format("bins must be in 1..{}, got {}", kSpeechSetMaxBins, bins));
  set.bins = static_cast<int>(bins);
  const uint32_t encoding = in.u32("the feature encoding");
  if (encoding != kEncodingFp16) in.fail(fmt::format("feature encoding {} is not 1 (fp16)", encoding));
  set.provenance = in.text("the provenance");
  const uint64_t count = in.u64("the number of utterances");
  constexpr size_t kSmallestUtterance = 16;  // four u32 lengths, no bytes
  if (count > in.remaining() / kSmallestUtterance)
    in.fail(fmt::format("{} utterances cannot fit in the {} bytes that remain", count, in.remaining()));
  set.utterances.reserve(std::min<uint64_t>(count, 1 << 16));  // grown as read: the count is checked only roughly
  std::unordered_set<std::string> ids;
  const size_t frame_bytes = static_cast<size_t>(speech_set_bytes_per_frame(set.bins));
  for (uint64_t u = 0; u < count; ++u) {
    SpeechUtterance& utt = set.utterances.emplace_back();
    const std::string where = fmt::format("utterance {}", u);
    utt.id = in.text(where + "'s id");
    const std::string name = fmt::format("{} ('{}')", where, printable(utt.id, false, 80));
    if (utt.id.empty()) in.fail(where + " has an empty id");
    if (!ids.insert(utt.id).second) in.fail(name + ": the id is used twice");
    utt.voice = in.text(name + "'s voice");
    utt.text = in.text(name + "'s text");
    const uint32_t frames = in.u32(name + "'s frame count");
    if (frames > in.remaining() / frame_bytes)
      in.fail(fmt::format("{}: {} frames of {} bins need {} bytes, only {} remain (truncated?)", name, frames, set.bins,
                          static_cast<uint64_t>(frames) * frame_bytes, in.remaining()));
    utt.frames = frames;
    const std::string_view raw = in.take(frames * frame_bytes, name + "'s features");
    utt.features.resize(static_cast<size_t>(frames) * set.bins);
    for (size_t i = 0; i < utt.features.size(); ++i) {
      const uint16_t h = static_cast<uint16_t>(static_cast<unsigned char>(raw[2 * i]) |
                                               (static_cast<unsigned char>(raw[2 * i + 1]) << 8));
      if (!fp16_finite(h))
        in.fail(fmt::format("{}: feature at frame {}, bin {} is not finite", name, i / set.bins, i % set.bins));
      utt.features[i] = from_fp16(h);
    }
  }
  if (in.remaining() != 0) in.fail(fmt::format("{} bytes after the last utterance", in.remaining()));
  return set;
}

void write_speech_set(const std::filesystem::path& file, const SpeechSet& set) {
  const std::string path = file.string();
  check_set(set, path);
  io::AtomicFile out(path);
  Writer w;
  w.raw(kMagic);
  w.u32(kSpeechSetVersion);
  w.u32(static_cast<uint32_t>(set.bins));
  w.u32(kEncodingFp16);
  w.text(set.provenance);
  w.u64(set.utterances.size());
  for (const SpeechUtterance& utt : set.utterances) {
    w.text(utt.id);
    w.text(utt.voice);
    w.text(utt.text);
    w.u32(static_cast<uint32_t>(utt.frames));
    for (float x : utt.features) w.fp16(x);
    w.flush(out);
  }
  w.flush(out);
  out.commit();
}

}  // namespace attn::data
