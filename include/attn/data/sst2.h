#pragma once
// SST-2 (Stanford Sentiment Treebank, binary) as distributed under ../shared/data/sst2:
// one example per line, `<sentence><SPACE><TAB><label>`, lower-cased and PTB-tokenised
// text, label 0 (negative) or 1 (positive). The training split is gzip-compressed.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attn::data {

struct LabeledText {
  std::string text;  // stripped of surrounding whitespace
  int32_t label = 0;
};

// Reads every line of `path` (plain or gzip): the text is everything before the LAST tab,
// stripped; the label (stripped) after it must be exactly "0" or "1". Empty lines are
// skipped. IoError when the file cannot be read; ValueError naming "<path>:<line>" for a
// line without a tab, with empty text, or with another label, and naming the path when it
// holds no example at all (an empty split would train or evaluate on nothing).
std::vector<LabeledText> read_sst2(const std::string& path);

// The file of a split under a data directory (the folder holding sst2/, or sst2/ itself):
//   train -> <sst2>/sentiment-train.gz, dev -> <sst2>/sentiment-dev, test -> <sst2>/sentiment-test
// IoError for an unknown split (listing train, dev, test). The file need not exist.
std::string sst2_split_path(const std::string& data_dir, const std::string& split);

// Raw text as the SST-2 files write it: a leading byte-order mark dropped, ASCII
// lower-cased, typographic quotes made plain, and PTB-tokenised (punctuation and clitics
// split off: "A gorgeous, witty movie. It doesn't" -> a gorgeous , witty movie . it does
// n't). Text already in that form comes back as its whitespace tokens.
std::vector<std::string> sst2_tokens(std::string_view raw);

// Jain & Wallace's training unit: the full sentences of SST-2's training file, which lists
// every sentence together with its labelled phrases. A sentence is a maximal string: one
// that is not a contiguous token span of a longer line. Duplicates are kept once (the first,
// with its label); the order is the file's. On ../shared/data/sst2 this keeps 6,885 of the
// 67,349 lines (docs/results.md); the original binary split has 6,920 sentences.
std::vector<LabeledText> sst2_sentences(const std::vector<LabeledText>& lines);

// Whitespace tokens of a text (runs of spaces/tabs separate; no empty tokens).
std::vector<std::string> whitespace_tokens(const std::string& text);

}  // namespace attn::data
