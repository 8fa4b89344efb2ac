// The .speech feature cache (attn/data/speech.h): round trip, fp16 rounding, damaged files.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "attn/data/speech.h"
#include "attn/error.h"
#include "test_support.h"

namespace attn::data {
namespace {

SpeechSet small_set() {
  SpeechSet set;
  set.bins = 3;
  set.provenance = "espeak-ng 1.51; seed 7";
  set.utterances.push_back({"u0", "en-us+f2", "go", 2, {-23.0259f, 0.0f, 1.5f, 11.75f, -0.25f, 3.0f}});
  set.utterances.push_back({"u1", "en-gb-scotland+m3", "i'm tom", 0, {}});  // no frames is allowed
  set.utterances.push_back({"u\xc3\xa9", "en", "caf\xc3\xa9", 1, {65504.0f, -65504.0f, 0.5f}});
  return set;
}

class SpeechSetFile : public testing::TempDirTest {
 protected:
  std::string read_error(const std::string& bytes) {
    put(path("bad.speech"), bytes);
    try {
      read_speech_set(path("bad.speech"));
    } catch (const ValueError& e) {
      return e.what();
    }
    return "";
  }
  // The bytes of small_set() as written.
  std::string good_bytes() {
    write_speech_set(path("good.speech"), small_set());
    return read(path("good.speech"));
  }
};

TEST_F(SpeechSetFile, RoundTripKeepsEverythingWithinFp16Rounding) {
  const SpeechSet in = small_set();
  write_speech_set(path("s.speech"), in);
  const SpeechSet out = read_speech_set(path("s.speech"));
  EXPECT_EQ(out.bins, 3);
  EXPECT_EQ(out.provenance, in.provenance);
  ASSERT_EQ(out.utterances.size(), in.utterances.size());
  for (size_t u = 0; u < in.utterances.size(); ++u) {
    const SpeechUtterance& a = in.utterances[u];
    const SpeechUtterance& b = out.utterances[u];
    EXPECT_EQ(b.id, a.id);
    EXPECT_EQ(b.voice, a.voice);
    EXPECT_EQ(b.text, a.text);
    EXPECT_EQ(b.frames, a.frames);
    ASSERT_EQ(b.features.size(), a.features.size());
    for (size_t i = 0; i < a.features.size(); ++i)  // fp16: 11 significant bits, so |error| <= 2^-11 |x|
      EXPECT_LE(std::fabs(b.features[i] - a.features[i]), std::ldexp(std::fabs(a.features[i]), -11))
          << "utterance " << u << " value " << i << ": " << a.features[i] << " came back as " << b.features[i];
  }
  EXPECT_EQ(out.utterances[0].features[3], 11.75f);     // exact in fp16
  EXPECT_NE(out.utterances[0].features[0], -23.0259f);  // not exact: rounded to -23.03125
  EXPECT_EQ(out.utterances[0].features[0], -23.03125f);
  // 8 magic + 4 version + 4 bins + 4 encoding + 4 + 22 provenance + 8 count, then per utterance
  // 4 lengths of 4 bytes, the strings and 2 bytes a value.
  const size_t expected =
      8 + 4 + 4 + 4 + 4 + 22 + 8 + (16 + 2 + 8 + 2 + 6 * 2) + (16 + 2 + 17 + 7) + (16 + 3 + 2 + 5 + 3 * 2);
  EXPECT_EQ(read(path("s.speech")).size(), expected);
}

TEST_F(SpeechSetFile, EmptySetRoundTrips) {
  SpeechSet in;
  write_speech_set(path("e.speech"), in);
  const SpeechSet out = read_speech_set(path("e.speech"));
  EXPECT_EQ(out.bins, 80);
  EXPECT_TRUE(out.utterances.empty());
}

TEST_F(SpeechSetFile, EveryTruncationIsAValueError) {
  const std::string bytes = good_bytes();
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::string error = read_error(bytes.substr(0, n));
    EXPECT_NE(error, "") << "a file cut to " << n << " of " << bytes.size() << " bytes was accepted";
  }
  EXPECT_NE(read_error(bytes.substr(0, bytes.size() - 1))
                .find("utterance 2 ('u\xc3\xa9'): 1 frames of 3 bins need 6 bytes, only 5 remain"),
            std::string::npos)
      << read_error(bytes.substr(0, bytes.size() - 1));
  EXPECT_NE(read_error(bytes + "x").find("1 bytes after the last utterance"), std::string::npos);
}

TEST_F(SpeechSetFile, BadMagicVersionAndEncoding) {
  std::string bytes = good_bytes();
  EXPECT_NE(read_error("RIFF" + bytes.substr(4)).find("not an attn speech set"), std::string::npos);
  EXPECT_NE(read_error("").find("not an attn speech set"), std::string::npos);
  std::string v = bytes;
  v[8] = 2;
  EXPECT_NE(read_error(v).find("format version 2; this attn reads version 1"), std::string::npos) << read_error(v);
  std::string b = bytes;
  b[12] = 0;
  EXPECT_NE(read_error(b).find("bins must be in 1..1024, got 0"), std::string::npos) << read_error(b);
  std::string e = bytes;
  e[16] = 3;
  EXPECT_NE(read_error(e).find("feature encoding 3 is not 1 (fp16)"), std::string::npos) << read_error(e);
}

TEST_F(SpeechSetFile, HugeLengthsAreRefusedBeforeAllocating) {
  const std::string bytes = good_bytes();
  const size_t count_at = 8 + 4 + 4 + 4 + 4 + 22;
  std::string count = bytes;
  for (size_t i = 0; i < 8; ++i) count[count_at + i] = '\xff';
  EXPECT_NE(read_error(count).find("18446744073709551615 utterances cannot fit"), std::string::npos)
      << read_error(count);
  std::string id = bytes;  // the first id's length
  for (size_t i = 0; i < 4; ++i) id[count_at + 8 + i] = '\xff';
  EXPECT_NE(read_error(id).find("utterance 0's id needs 4294967295 bytes"), std::string::npos) << read_error(id);
  std::string frames = bytes;  // the first utterance's frame count: after "u0", "en-us+f2", "go"
  const size_t frames_at = count_at + 8 + 4 + 2 + 4 + 8 + 4 + 2;
  for (size_t i = 0; i < 4; ++i) frames[frames_at + i] = '\xff';
  EXPECT_NE(read_error(frames).find("utterance 0 ('u0'): 4294967295 frames of 3 bins need 25769803770 bytes"),
            std::string::npos)
      << read_error(frames);
}

TEST_F(SpeechSetFile, NonFiniteRepeatedIdsAndBadTextAreRefused) {
  const std::string bytes = good_bytes();
  const size_t first_feature = 8 + 4 + 4 + 4 + 4 + 22 + 8 + 4 + 2 + 4 + 8 + 4 + 2 + 4;
  std::string inf = bytes;  // fp16 +inf: 0x7c00
  inf[first_feature + 2] = 0x00;
  inf[first_feature + 3] = 0x7c;
  EXPECT_NE(read_error(inf).find("utterance 0 ('u0'): feature at frame 0, bin 1 is not finite"), std::string::npos)
      << read_error(inf);
  std::string twice = bytes;  // "u1" -> "u0"
  const size_t second_id = first_feature + 6 * 2 + 4;
  ASSERT_EQ(twice.substr(second_id, 2), "u1");
  twice[second_id + 1] = '0';
  EXPECT_NE(read_error(twice).find("utterance 1 ('u0'): the id is used twice"), std::string::npos) << read_error(twice);
  std::string latin1 = bytes;
  latin1[second_id + 1] = '\xe9';
  EXPECT_NE(read_error(latin1).find("utterance 1's id is not valid UTF-8"), std::string::npos) << read_error(latin1);
}

TEST_F(SpeechSetFile, WriteRefusesWhatTheFileCannotHoldAndLeavesTheOldFile) {
  write_speech_set(path("s.speech"), small_set());
  const std::string before = read(path("s.speech"));
  const std::string file = path("s.speech");
  SpeechSet nan = small_set();
  nan.utterances[1].features.push_back(1.0f);
  EXPECT_THROW_MSG(write_speech_set(file, nan), ValueError,
                   "utterance 1 ('u1'): features (frames=0, bins=3) expected 0 values, got 1");
  nan = small_set();
  nan.utterances[0].features[4] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW_MSG(write_speech_set(file, nan), ValueError, "feature at frame 1, bin 1 is nan");
  SpeechSet big = small_set();
  big.utterances[2].features[0] = 70000.0f;
  EXPECT_THROW_MSG(write_speech_set(file, big), ValueError, "within fp16's +-65504");
  SpeechSet twice = small_set();
  twice.utterances[1].id = "u0";
  EXPECT_THROW_MSG(write_speech_set(file, twice), ValueError, "utterance 1 ('u0'): the id is used twice");
  SpeechSet empty = small_set();
  empty.utterances[0].id = "";
  EXPECT_THROW_MSG(write_speech_set(file, empty), ValueError, "utterance 0 has an empty id");
  SpeechSet bins = small_set();
  bins.bins = 0;
  EXPECT_THROW_MSG(write_speech_set(file, bins), ValueError, "bins must be in 1..1024, got 0");
  EXPECT_EQ(read(path("s.speech")), before);
}

TEST_F(SpeechSetFile, MissingFileIsAnIoError) {
  EXPECT_THROW_MSG(read_speech_set(path("none.speech")), IoError, "none.speech");
}

}  // namespace
}  // namespace attn::data
