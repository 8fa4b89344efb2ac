#pragma once
// CMUdict as `attn data get cmudict` installs it, made from its upstream: the npm package
// cmu-pronouncing-dictionary 3.0.0, whose index.js is one JavaScript object
//   export const dictionary = {
//     "'bout": "B AW1 T",
//     ...
//   }
// (a JSON object after the `export const dictionary =`).
#include <string>
#include <string_view>

namespace attn::data {

// The dictionary of the package's index.js as cmudict.dict lines, "word  PH ON EMES\n" (two
// spaces), in the object's order: byte-identical to ../shared/data/cmudict/cmudict.dict for
// the package's real index.js. ValueError, one line: not the module (no `export const
// dictionary = {`), JSON that does not parse (the parser's byte offset), a value that is not
// a string, a word twice, a word empty or with white space or a control character, a
// pronunciation empty, starting with a space or holding a control character (a newline would
// split the line; CMUdict's own comments, "AO1 L B AO0 R G # place, danish", are kept), or no
// entry at all.
std::string cmudict_lines_from_npm_module(std::string_view index_js);

}  // namespace attn::data
