#pragma once
// Corpus BLEU exactly as sacreBLEU 2.x computes it by default (`sacrebleu ref < hyp`, or
// BLEU().corpus_score(hyps, [refs])): one reference per sentence, tokenizer "13a"
// (mteval-v13a), case-sensitive (or lowercased as `sacrebleu --lowercase`: Python's
// str.lower(), the full Unicode mapping, through ICU), max n-gram order 4, smoothing "exp"
// (mteval's: the k-th order with no match gets precision 1 / (2^k * total)), effective order
// off, brevity penalty exp(1 - r/c) when c < r. tests/parity/test_sacrebleu.py checks it
// against sacreBLEU 2.6.0 itself.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attn::data {

// The mteval-v13a tokenisation of one segment (sacrebleu/tokenizers/tokenizer_13a.py):
// drop "<skipped>", join "-\n", '\n' -> ' ', unescape &quot; &amp; &lt; &gt;, split off
// punctuation and symbols, split '.' and ',' unless between digits ("1,000.5" stays), split
// '-' after a digit, then single spaces (Python str.split(): Unicode whitespace too).
//   tokenize_13a("Hello, world!") == "Hello , world !"
std::string tokenize_13a(const std::string& line);

// Python's str.split() of UTF-8 text: the maximal runs of characters that are not Unicode
// whitespace (str.isspace(): also U+00A0 and U+202F, the no-break spaces of French typography).
std::vector<std::string_view> python_split(std::string_view text);

// Python's str.lower() of UTF-8 text: the full Unicode lowercase mapping (İ -> i̇, final Σ ->
// ς), as sacreBLEU's --lowercase applies it. Invalid UTF-8 becomes U+FFFD.
std::string lowercase_unicode(const std::string& text);

struct BleuOptions {
  bool lowercase = false;  // sacreBLEU's --lowercase (-lc): both sides through lowercase_unicode
};

struct BleuResult {
  bool lowercase = false;                     // the signature's case:lc (else case:mixed)
  double score = 0.0;                         // 0..100
  std::array<double, 4> precisions{};         // 0..100 per n-gram order (smoothed as sacreBLEU)
  double brevity_penalty = 0.0;               // BP
  double ratio = 0.0;                         // hyp_len / ref_len (0 when ref_len is 0)
  int64_t hyp_len = 0, ref_len = 0;           // tokens after 13a
  std::array<int64_t, 4> correct{}, total{};  // clipped n-gram matches, hypothesis n-grams

  // sacreBLEU's line:
  //   BLEU = 28.13 60.1/34.2/21.0/13.5 (BP = 1.000 ratio = 1.012 hyp_len = 12345 ref_len = 12200)
  std::string to_string() const;
  // sacreBLEU's JSON keys (name, score rounded to 2 decimals, signature, verbose_score,
  // nrefs, case, eff, tok, smooth, version) plus exact_score, precisions, bp, ratio, hyp_len,
  // ref_len, counts, totals.
  std::string to_json() const;
};

// BLEU of hypotheses[i] against references[i] (lowercased with options.lowercase, trailing
// whitespace stripped, then 13a). An empty reference line counts as sacreBLEU 2.6 counts it
// (no reference length, no match). Throws ValueError when the counts differ or when there
// are no sentences.
BleuResult corpus_bleu(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references,
                       const BleuOptions& options = {});

}  // namespace attn::data
