#include "attn/data/bleu.h"

#include <fmt/format.h>
#include <unicode/locid.h>
#include <unicode/unistr.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string_view>
#include <unordered_map>

#include "attn/error.h"
#include "attn/json.h"

namespace attn::data {
namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  for (;;) {
    const size_t hit = s.find(from, pos);
    if (hit == std::string::npos) break;
    out.append(s, pos, hit - pos);
    out.append(to);
    pos = hit + from.size();
  }
  out.append(s, pos, std::string::npos);
  s = std::move(out);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The characters of r'([\{-\~\[-\` -\&\(-\+\:-\@\/])': { | } ~  [ \ ] ^ _ `  space ! " # $ % &
// ( ) * +  : ; < = > ? @  /   (not ' - . , which have their own rules).
bool is_13a_symbol(unsigned char c) {
  return (c >= 0x7B && c <= 0x7E) || (c >= 0x5B && c <= 0x60) || (c >= 0x20 && c <= 0x26) || (c >= 0x28 && c <= 0x2B) ||
         (c >= 0x3A && c <= 0x40) || c == '/';
}

// Python's re.sub of a two-character pattern: leftmost, non-overlapping matches, scanned
// left to right. Working on bytes gives the same result as on code points here: the classes
// that can match a non-ASCII character are negated ASCII classes ([^0-9]), and a multi-byte
// character can only meet '.', ',' or '-' with its last (before) or first (after) byte.
template <class Match, class Emit>
std::string sub_pairs(const std::string& s, Match match, Emit emit) {
  std::string out;
  out.reserve(s.size() + s.size() / 2);
  size_t i = 0;
  while (i < s.size()) {
    if (i + 1 < s.size() && match(s[i], s[i + 1])) {
      emit(out, s[i], s[i + 1]);
      i += 2;
    } else {
      out.push_back(s[i]);
      ++i;
    }
  }
  return out;
}

// Decodes the UTF-8 code point at s[i] (its byte length in *len); invalid bytes decode as
// themselves, one byte long (Python would have refused to read them at all).
uint32_t code_point_at(std::string_view s, size_t i, size_t* len) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  auto cont = [&](size_t k) -> int {
    if (i + k >= s.size()) return -1;
    const auto b = static_cast<unsigned char>(s[i + k]);
    return (b & 0xC0) == 0x80 ? (b & 0x3F) : -1;
  };
  if (b0 < 0x80) {
    *len = 1;
    return b0;
  }
  if ((b0 & 0xE0) == 0xC0) {
    const int c1 = cont(1);
    if (c1 >= 0) {
      *len = 2;
      return ((b0 & 0x1Fu) << 6) | static_cast<uint32_t>(c1);
    }
  } else if ((b0 & 0xF0) == 0xE0) {
    const int c1 = cont(1), c2 = cont(2);
    if (c1 >= 0 && c2 >= 0) {
      *len = 3;
      return ((b0 & 0x0Fu) << 12) | (static_cast<uint32_t>(c1) << 6) | static_cast<uint32_t>(c2);
    }
  } else if ((b0 & 0xF8) == 0xF0) {
    const int c1 = cont(1), c2 = cont(2), c3 = cont(3);
    if (c1 >= 0 && c2 >= 0 && c3 >= 0) {
      *len = 4;
      return ((b0 & 0x07u) << 18) | (static_cast<uint32_t>(c1) << 12) | (static_cast<uint32_t>(c2) << 6) |
             static_cast<uint32_t>(c3);
    }
  }
  *len = 1;
  return 0xFFFFFFFFu;
}

// Python's str.isspace() / str.split() whitespace.
bool is_python_space(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

}  // namespace

std::vector<std::string_view> python_split(std::string_view s) {
  std::vector<std::string_view> tokens;
  size_t i = 0;
  size_t start = std::string_view::npos;
  while (i < s.size()) {
    size_t len = 1;
    const uint32_t c = code_point_at(s, i, &len);
    if (is_python_space(c)) {
      if (start != std::string_view::npos) {
        tokens.push_back(s.substr(start, i - start));
        start = std::string_view::npos;
      }
    } else if (start == std::string_view::npos) {
      start = i;
    }
    i += len;
  }
  if (start != std::string_view::npos) tokens.push_back(s.substr(start));
  return tokens;
}

namespace {

// Python's s.rstrip().
std::string python_rstrip(const std::string& s) {
  size_t end = 0;  // one past the last non-space code point
  size_t i = 0;
  while (i < s.size()) {
    size_t len = 1;
    const uint32_t c = code_point_at(s, i, &len);
    if (!is_python_space(c)) end = i + len;
    i += len;
  }
  return s.substr(0, end);
}

using NgramCounts = std::unordered_map<std::string, int64_t>;

// Every n-gram of order 1..4 (tokens joined by ' ': 13a tokens hold no whitespace, so the
// key is unique) with its count, per order.
std::array<NgramCounts, 4> count_ngrams(const std::vector<std::string_view>& tokens) {
  std::array<NgramCounts, 4> counts;
  const size_t len = tokens.size();
  for (size_t n = 1; n <= 4; ++n) {
    if (len < n) break;
    for (size_t i = 0; i + n <= len; ++i) {
      std::string key(tokens[i]);
      for (size_t k = 1; k < n; ++k) {
        key.push_back(' ');
        key.append(tokens[i + k]);
      }
      ++counts[n - 1][key];
    }
  }
  return counts;
}

// sacreBLEU's my_log: log(0) is floored to -9999999999 instead of -inf.
double floored_log(double x) { return x == 0.0 ? -9999999999.0 : std::log(x); }

}  // namespace

std::string lowercase_unicode(const std::string& text) {
  // The root locale: Unicode's default full mappings with the Final_Sigma context, as
  // Python's str.lower() (no Turkish or Lithuanian rules).
  std::string out;
  icu::UnicodeString::fromUTF8(text).toLower(icu::Locale::getRoot()).toUTF8String(out);
  return out;
}

std::string tokenize_13a(const std::string& input) {
  std::string line = input;
  replace_all(line, "<skipped>", "");
  replace_all(line, "-\n", "");
  replace_all(line, "\n", " ");
  replace_all(line, "&quot;", "\"");
  replace_all(line, "&amp;", "&");
  replace_all(line, "&lt;", "<");
  replace_all(line, "&gt;", ">");
  line = " " + line + " ";

  // r'([\{-\~\[-\` -\&\(-\+\:-\@\/])' -> r' \1 '
  std::string spaced;
  spaced.reserve(line.size() * 2);
  for (const char c : line) {
    if (is_13a_symbol(static_cast<unsigned char>(c))) {
      spaced.push_back(' ');
      spaced.push_back(c);
      spaced.push_back(' ');
    } else {
      spaced.push_back(c);
    }
  }
  // r'([^0-9])([\.,])' -> r'\1 \2 '   (period and comma unless preceded by a digit)
  spaced = sub_pairs(
      spaced, [](char a, char b) { return !is_digit(a) && (b == '.' || b == ','); },
      [](std::string& out, char a, char b) {
        out.push_back(a);
        out.push_back(' ');
        out.push_back(b);
        out.push_back(' ');
      });
  // r'([\.,])([^0-9])' -> r' \1 \2'   (period and comma unless followed by a digit)
  spaced = sub_pairs(
      spaced, [](char a, char b) { return (a == '.' || a == ',') && !is_digit(b); },
      [](std::string& out, char a, char b) {
        out.push_back(' ');
        out.push_back(a);
        out.push_back(' ');
        out.push_back(b);
      });
  // r'([0-9])(-)' -> r'\1 \2 '   (dash after a digit)
  spaced = sub_pairs(
      spaced, [](char a, char b) { return is_digit(a) && b == '-'; },
      [](std::string& out, char a, char b) {
        out.push_back(a);
        out.push_back(' ');
        out.push_back(b);
        out.push_back(' ');
      });

  // ' '.join(line.strip().split())
  std::string result;
  result.reserve(spaced.size());
  for (const auto token : python_split(spaced)) {
    if (!result.empty()) result.push_back(' ');
    result.append(token);
  }
  return result;
}

BleuResult corpus_bleu(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references,
                       const BleuOptions& options) {
  if (hypotheses.size() != references.size()) {
    throw ValueError(fmt::format("corpus_bleu: {} hypotheses but {} references (one reference per line expected)",
                                 hypotheses.size(), references.size()));
  }
  if (hypotheses.empty()) throw ValueError("corpus_bleu: no sentences");

  BleuResult r;
  r.lowercase = options.lowercase;
  // sacreBLEU's BLEU._preprocess_segment: lower(), then rstrip(), then the tokenizer.
  const auto prepare = [&](const std::string& segment) {
    return tokenize_13a(python_rstrip(options.lowercase ? lowercase_unicode(segment) : segment));
  };
  for (size_t line = 0; line < hypotheses.size(); ++line) {
    const std::string hyp = prepare(hypotheses[line]);
    const std::string ref = prepare(references[line]);
    const auto hyp_tokens = python_split(hyp);
    const auto ref_tokens = python_split(ref);
    r.hyp_len += static_cast<int64_t>(hyp_tokens.size());
    r.ref_len += static_cast<int64_t>(ref_tokens.size());  // the closest (only) reference
    const auto hyp_counts = count_ngrams(hyp_tokens);
    const auto ref_counts = count_ngrams(ref_tokens);
    for (size_t n = 0; n < 4; ++n) {
      for (const auto& [ngram, count] : hyp_counts[n]) {
        r.total[n] += count;
        const auto it = ref_counts[n].find(ngram);
        if (it != ref_counts[n].end()) r.correct[n] += std::min(count, it->second);  // clipped
      }
    }
  }

  // BLEU.compute_bleu, smooth_method "exp", effective_order off, in sacreBLEU's order of
  // floating-point operations.
  const double sys_len = static_cast<double>(r.hyp_len);
  const double ref_len = static_cast<double>(r.ref_len);
  if (r.hyp_len < r.ref_len) {
    r.brevity_penalty = r.hyp_len > 0 ? std::exp(1.0 - ref_len / sys_len) : 0.0;
  } else {
    r.brevity_penalty = 1.0;
  }
  r.ratio = r.ref_len > 0 ? sys_len / ref_len : 0.0;
  r.precisions.fill(0.0);
  bool any_match = false;
  for (const int64_t c : r.correct) any_match = any_match || c != 0;
  if (!any_match) {
    r.score = 0.0;
    return r;
  }
  double smooth_mteval = 1.0;
  for (size_t n = 0; n < 4; ++n) {
    if (r.total[n] == 0) break;  // its precision stays 0: log floored, score ~0
    if (r.correct[n] == 0) {
      smooth_mteval *= 2.0;
      r.precisions[n] = 100.0 / (smooth_mteval * static_cast<double>(r.total[n]));
    } else {
      r.precisions[n] = 100.0 * static_cast<double>(r.correct[n]) / static_cast<double>(r.total[n]);
    }
  }
  double log_sum = 0.0;
  for (const double p : r.precisions) log_sum += floored_log(p);
  r.score = r.brevity_penalty * std::exp(log_sum / 4.0);
  return r;
}

std::string BleuResult::to_string() const {
  return fmt::format("BLEU = {:.2f} {:.1f}/{:.1f}/{:.1f}/{:.1f} (BP = {:.3f} ratio = {:.3f} hyp_len = {} ref_len = {})",
                     score, precisions[0], precisions[1], precisions[2], precisions[3], brevity_penalty, ratio, hyp_len,
                     ref_len);
}

std::string BleuResult::to_json() const {
  const std::string verbose =
      fmt::format("{:.1f}/{:.1f}/{:.1f}/{:.1f} (BP = {:.3f} ratio = {:.3f} hyp_len = {} ref_len = {})", precisions[0],
                  precisions[1], precisions[2], precisions[3], brevity_penalty, ratio, hyp_len, ref_len);
  nlohmann::ordered_json j;
  j["name"] = "BLEU";
  j["score"] = std::stod(fmt::format("{:.2f}", score));  // as sacreBLEU: float(f'{score:.2f}')
  const std::string casing = lowercase ? "lc" : "mixed";
  j["signature"] = "nrefs:1|case:" + casing + "|eff:no|tok:13a|smooth:exp|version:attn";
  j["verbose_score"] = verbose;
  j["nrefs"] = "1";
  j["case"] = casing;
  j["eff"] = "no";
  j["tok"] = "13a";
  j["smooth"] = "exp";
  j["version"] = "attn";
  j["exact_score"] = score;
  j["precisions"] = precisions;
  j["bp"] = brevity_penalty;
  j["ratio"] = ratio;
  j["hyp_len"] = hyp_len;
  j["ref_len"] = ref_len;
  j["counts"] = correct;
  j["totals"] = total;
  return json_text(j, 1);
}

}  // namespace attn::data
