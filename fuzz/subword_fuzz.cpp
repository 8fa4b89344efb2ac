// libFuzzer target: SentencePiece model loading (data::SubwordModel::from_serialized, what
// SubwordModel::load runs on a file's bytes), then encoding a fixed sentence with an accepted
// model. Bad bytes must end in attn::Error.
#include "attn/data/subword.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  attn::fuzz::expect_only_attn_errors([&] {
    const attn::data::SubwordModel model = attn::data::SubwordModel::from_serialized(bytes, "fuzz.model");
    const auto ids = model.encode("Ein Mann fährt Fahrrad .");
    (void)model.decode(ids);
  });
  return 0;
}
