#pragma once
// Text from outside (a file name, a metadata string, a line of input) quoted in a message
// or written to a terminal: printable() makes it one safe line. A newline in a checkpoint's
// character list used to split an error message in two, and an ESC in it reached the
// terminal as an escape sequence.
#include <cstddef>
#include <limits>
#include <string>
#include <string_view>

namespace attn {

// The byte length of the UTF-8 sequence at s[i], or 0 when it is not valid UTF-8 (RFC 3629:
// no overlong forms, no surrogates, nothing past U+10FFFF, as JSON requires).
size_t utf8_length_at(std::string_view s, size_t i);

// `text` with every byte that a terminal could act on written as \xNN: the C0 controls
// (newline, ESC, ...), DEL, the C1 controls (U+0080..U+009F) and bytes that are not valid
// UTF-8 (a Latin-1 0x9B is an 8-bit CSI to some terminals). Other UTF-8 text stays as it
// is; with escape_high every byte >= 0x80 is escaped too. Longer than `limit` bytes: cut,
// "..." appended.
std::string printable(std::string_view text, bool escape_high = false,
                      size_t limit = std::numeric_limits<size_t>::max());

}  // namespace attn
