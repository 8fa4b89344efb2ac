#include "attn/data/sentencepiece_check.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "attn/error.h"

namespace attn::data {
namespace {

[[noreturn]] void damaged(const std::string& name, const std::string& why) {
  throw IoError(fmt::format("cannot load SentencePiece model '{}': a damaged model ({})", name, why));
}

// One field of protobuf's wire format: its number, wire type, and for length-delimited
// fields (type 2) the bytes.
struct WireField {
  uint32_t number = 0;
  uint32_t type = 0;
  std::string_view bytes;
};

bool read_varint(std::string_view& in, uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (in.empty()) return false;
    const auto byte = static_cast<uint8_t>(in.front());
    in.remove_prefix(1);
    value |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

// The fields of one message, in order; false when the bytes are not wire format (groups,
// which SentencePiece's messages never use, count as not wire format here).
bool read_fields(std::string_view in, std::vector<WireField>& fields) {
  while (!in.empty()) {
    uint64_t tag = 0;
    if (!read_varint(in, tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1FFFFFFF) return false;
    WireField f{static_cast<uint32_t>(tag >> 3), static_cast<uint32_t>(tag & 7), {}};
    uint64_t value = 0;
    switch (f.type) {
      case 0:
        if (!read_varint(in, value)) return false;
        break;
      case 1:
      case 5: {
        const size_t width = f.type == 1 ? 8 : 4;
        if (in.size() < width) return false;
        in.remove_prefix(width);
        break;
      }
      case 2:
        if (!read_varint(in, value) || value > in.size()) return false;
        f.bytes = in.substr(0, static_cast<size_t>(value));
        in.remove_prefix(static_cast<size_t>(value));
        break;
      default:
        return false;
    }
    fields.push_back(f);
  }
  return true;
}

uint32_t unit_at(std::string_view trie, size_t index) {
  uint32_t unit = 0;
  std::memcpy(&unit, trie.data() + index * 4, 4);  // little-endian, as SentencePiece reads it
  return unit;
}
// darts-clone's DoubleArrayUnit.
uint32_t unit_offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }
uint32_t unit_label(uint32_t unit) { return unit & ((1u << 31) | 0xFFu); }
bool unit_has_leaf(uint32_t unit) { return ((unit >> 8) & 1u) == 1u; }
uint32_t unit_value(uint32_t unit) { return unit & ((1u << 31) - 1u); }

// A precompiled map: uint32 trie size in bytes, the trie's units, then NUL-terminated
// replacement strings that the trie's values index. darts-clone's prefix search reads
// units[id ^ offset ^ c] for every byte c it is given, and a leaf's value at units[id ^ offset]:
// every node reachable from the root must keep all of those inside the trie, and every value
// must start a NUL-terminated string inside the replacements.
void check_charsmap(std::string_view blob, const std::string& name, const char* which) {
  if (blob.empty()) return;  // no map: the library normalises nothing
  const auto fail = [&](const std::string& why) { damaged(name, fmt::format("its {} character map {}", which, why)); };
  if (blob.size() <= 4) fail("is shorter than its header");
  uint32_t trie_bytes = 0;
  std::memcpy(&trie_bytes, blob.data(), 4);
  if (trie_bytes == 0 || trie_bytes % 4 != 0 || trie_bytes > blob.size() - 4) fail("has a trie size outside the map");
  const std::string_view trie = blob.substr(4, trie_bytes);
  const std::string_view strings = blob.substr(4 + static_cast<size_t>(trie_bytes));
  const size_t units = trie.size() / 4;
  std::vector<char> seen(units, 0);
  std::vector<size_t> pending{0};
  seen[0] = 1;
  while (!pending.empty()) {
    const size_t node = pending.back();
    pending.pop_back();
    const uint32_t unit = unit_at(trie, node);
    const uint64_t base = static_cast<uint64_t>(node) ^ unit_offset(unit);
    if ((base | 0xFFu) >= units) fail("sends its trie outside the map");
    if (node != 0 && unit_has_leaf(unit)) {
      const uint32_t value = unit_value(unit_at(trie, static_cast<size_t>(base)));
      if (value >= strings.size() || strings.find('\0', value) == std::string_view::npos)
        fail("points outside its replacement strings");
    }
    for (uint32_t c = 1; c < 256; ++c) {
      const size_t child = static_cast<size_t>(base ^ c);
      if (unit_label(unit_at(trie, child)) == c && !seen[child]) {
        seen[child] = 1;
        pending.push_back(child);
      }
    }
  }
}

}  // namespace

bool check_sentencepiece_charsmaps(const std::string& serialized, const std::string& name) {
  std::vector<WireField> model;
  if (!read_fields(serialized, model)) return false;
  // ModelProto: 3 normalizer_spec, 5 denormalizer_spec (NormalizerSpec: 2 precompiled_charsmap).
  // A message field given twice is merged and a bytes field's last value wins, so every
  // occurrence is checked.
  for (const WireField& spec : model) {
    if ((spec.number != 3 && spec.number != 5) || spec.type != 2) continue;
    std::vector<WireField> normalizer;
    if (!read_fields(spec.bytes, normalizer)) damaged(name, "a normalizer that is not protobuf wire format");
    for (const WireField& f : normalizer)
      if (f.number == 2 && f.type == 2)
        check_charsmap(f.bytes, name, spec.number == 3 ? "normalizer's" : "denormalizer's");
  }
  return true;
}

}  // namespace attn::data
