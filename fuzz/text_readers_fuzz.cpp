// libFuzzer target: the text readers on arbitrary bytes: data::read_lines (plain or gzip),
// the UTF-8 checks, data::read_sst2, data::sst2_tokens and data::parse_symbols. Beyond "no
// crash", it checks what the readers promise: valid_utf8 returns valid UTF-8 and leaves valid
// text unchanged, and read_lines never returns invalid UTF-8.
#include <cstdio>
#include <cstdlib>

#include "attn/data/sst2.h"
#include "attn/data/tasks.h"
#include "attn/data/text.h"
#include "fuzz_support.h"

using attn::fuzz::require;

namespace {

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = attn::data::utf8_length_at(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string fixed = attn::data::valid_utf8(bytes);
  require(is_valid_utf8(fixed), "valid_utf8 returned invalid UTF-8");
  if (is_valid_utf8(bytes)) require(fixed == bytes, "valid_utf8 changed valid text");
  (void)attn::data::sst2_tokens(bytes);
  attn::fuzz::expect_only_attn_errors([&] { (void)attn::data::parse_symbols(std::string(bytes)); });

  const std::string path = attn::fuzz::scratch_path("lines.gz");  // read as plain or gzip by content
  attn::fuzz::write_file(path, data, size);
  attn::fuzz::expect_only_attn_errors([&] {
    for (const std::string& line : attn::data::read_lines(path))
      require(is_valid_utf8(line), "read_lines returned invalid UTF-8");
  });
  attn::fuzz::expect_only_attn_errors([&] { (void)attn::data::read_sst2(path); });
  return 0;
}
