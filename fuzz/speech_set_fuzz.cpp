// libFuzzer target: the spoken-sentence feature cache (data::read_speech_set) on arbitrary bytes.
// Beyond "no crash", it checks what the reader promises: every utterance it returns has a
// non-empty, distinct id, frames * bins finite features, and the set written back and read
// again is the same set.
#include <cmath>
#include <set>

#include "attn/data/speech.h"
#include "fuzz_support.h"

using attn::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = attn::fuzz::scratch_path("set.speech");
  attn::fuzz::write_file(path, data, size);
  attn::fuzz::expect_only_attn_errors([&] {
    const attn::data::SpeechSet set = attn::data::read_speech_set(path);
    require(set.bins >= 1 && set.bins <= attn::data::kSpeechSetMaxBins, "bins outside 1..1024");
    std::set<std::string> ids;
    for (const attn::data::SpeechUtterance& u : set.utterances) {
      require(!u.id.empty() && ids.insert(u.id).second, "an empty or repeated id");
      require(u.frames >= 0 && static_cast<int64_t>(u.features.size()) == u.frames * set.bins,
              "features that are not frames * bins");
      for (float x : u.features) require(std::isfinite(x), "a non-finite feature");
    }
    // What was read is a set the writer takes, and it reads back unchanged (fp16 values are exact).
    const std::string again = attn::fuzz::scratch_path("again.speech");
    attn::data::write_speech_set(again, set);
    const attn::data::SpeechSet back = attn::data::read_speech_set(again);
    require(back.provenance == set.provenance && back.utterances.size() == set.utterances.size(),
            "the written set reads back different");
    for (size_t i = 0; i < set.utterances.size(); ++i)
      require(back.utterances[i].id == set.utterances[i].id && back.utterances[i].text == set.utterances[i].text &&
                  back.utterances[i].features == set.utterances[i].features,
              "an utterance reads back different");
  });
  return 0;
}
