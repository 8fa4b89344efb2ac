// libFuzzer target: the CMUdict reader (data::read_cmudict, plain or gzip) on arbitrary bytes.
// Beyond "no crash", it checks what the reader promises: every entry it returns has a word
// spelled in the 29 letters, at least one pronunciation, and only the 84 ARPAbet symbols.
#include <cstdio>
#include <cstdlib>
#include <set>

#include "attn/data/cmudict.h"
#include "fuzz_support.h"

using attn::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::set<std::string> letters(attn::data::cmudict_letters().begin(),
                                             attn::data::cmudict_letters().end());
  static const std::set<std::string> phonemes(attn::data::cmudict_phonemes().begin(),
                                              attn::data::cmudict_phonemes().end());
  const std::string path = attn::fuzz::scratch_path("cmudict.dict.gz");  // read as plain or gzip by content
  attn::fuzz::write_file(path, data, size);
  attn::fuzz::expect_only_attn_errors([&] {
    for (const attn::data::CmudictEntry& e : attn::data::read_cmudict(path)) {
      require(!e.word.empty() && !e.pronunciations.empty(), "an entry without a word or a pronunciation");
      for (char c : e.word) require(letters.count(std::string(1, c)) > 0, "a word outside the letters");
      for (const auto& p : e.pronunciations) {
        require(!p.empty(), "an empty pronunciation");
        for (const std::string& s : p) require(phonemes.count(s) > 0, "a phoneme outside the 84 symbols");
      }
      (void)attn::data::cmudict_split(e.word);
    }
  });
  return 0;
}
