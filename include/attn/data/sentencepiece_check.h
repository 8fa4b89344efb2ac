#pragma once
// Checks the parts of a serialized SentencePiece model that libsentencepiece trusts without
// checking: the precompiled character maps of its normalizer and denormalizer (a darts-clone
// double-array trie followed by the replacement strings). A damaged map makes the library read
// outside its buffer while it normalises text (found by fuzz/subword_fuzz), so these bytes are
// checked before the library sees them.
#include <string>

namespace attn::data {

// false when the bytes are not protobuf wire format at all (the caller refuses them as not a
// model); IoError "cannot load SentencePiece model '<name>': a damaged model (...)" when a
// character map could send the library outside its buffers.
bool check_sentencepiece_charsmaps(const std::string& serialized, const std::string& name);

}  // namespace attn::data
