// libFuzzer target: a character language model's checkpoint metadata. The input is the text
// of the "attn" metadata entry; decode::load_char_lm reads it from a file that holds no
// tensors, so the metadata, its character list and its configuration are all checked before
// the (missing) parameters are; an accepted configuration is built under a 64 MiB
// ATTN_MEMORY_LIMIT, as in config_fuzz. The character list is also given to data::CharVocab
// alone. The promises: only attn errors for any bytes, and a list that is accepted holds
// distinct single characters, none of them a control character (a crafted list made
// `attn sample` print newlines and terminal escapes).
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

#include "attn/data/char_vocab.h"
#include "attn/decode/sample.h"
#include "attn/printable.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("ATTN_MEMORY_LIMIT", "64M", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  attn::io::SafetensorsFile file;
  file.path = "fuzz.safetensors";
  file.metadata["attn"] = text;
  attn::fuzz::expect_only_attn_errors([&] { (void)attn::decode::load_char_lm(file, file.path); });
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("characters") || !j["characters"].is_array()) return 0;
  std::vector<std::string> characters;
  for (const auto& c : j["characters"])
    if (c.is_string()) characters.push_back(c.get<std::string>());
  attn::fuzz::expect_only_attn_errors([&] {
    const attn::data::CharVocab vocab(characters);
    std::set<std::string> seen;
    for (const std::string& c : vocab.characters())
      if (c.empty() || attn::utf8_length_at(c, 0) != c.size() || attn::printable(c) != c || !seen.insert(c).second)
        std::abort();  // accepted an entry that is not one printable character, or a duplicate
  });
  return 0;
}
