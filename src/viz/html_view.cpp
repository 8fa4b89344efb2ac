#include "attn/viz/html_view.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>

#include "attn/error.h"
#include "attn/io/atomic_file.h"

namespace attn::viz {
namespace detail {
// Defined in the generated viewer_assets.cpp (cmake/embed_files.cmake).
std::string_view page_html();
std::string_view viewer_css();
std::string_view viewer_js();
}  // namespace detail

namespace {

// `text` with its one `marker` replaced by `value`; a template without it is a build defect.
std::string replace_marker(std::string text, std::string_view marker, std::string_view value) {
  const size_t at = text.find(marker);
  if (at == std::string::npos) throw ValueError("viewer/page.html lacks the marker " + std::string(marker));
  text.replace(at, marker.size(), value);
  return text;
}

constexpr double kFixedPointScale = 16777215.0;  // 2^24 - 1: w = 1 is representable

// A softmax's rounding can give 1 + 1 ulp: clamped to 1.
uint32_t fixed_point(float w) {
  return static_cast<uint32_t>(std::lround(std::min(static_cast<double>(w), 1.0) * kFixedPointScale));
}

std::string base64(const unsigned char* bytes, size_t size) {
  static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((size + 2) / 3 * 4);
  for (size_t i = 0; i < size; i += 3) {
    const uint32_t n = (uint32_t{bytes[i]} << 16) | (i + 1 < size ? uint32_t{bytes[i + 1]} << 8 : 0u) |
                       (i + 2 < size ? uint32_t{bytes[i + 2]} : 0u);
    out += alphabet[(n >> 18) & 63];
    out += alphabet[(n >> 12) & 63];
    out += i + 1 < size ? alphabet[(n >> 6) & 63] : '=';
    out += i + 2 < size ? alphabet[n & 63] : '=';
  }
  return out;
}

}  // namespace

double packed_weight(float w) { return fixed_point(w) / kFixedPointScale; }

std::string pack_weights(const std::vector<float>& weights) {
  std::vector<unsigned char> raw(weights.size() * 3);
  for (size_t i = 0; i < weights.size(); ++i) {
    const float w = weights[i];
    if (!(w >= 0.0f && w <= 1.0f + 1e-5f))
      throw ValueError("pack_weights: weight " + std::to_string(i) + " is " + std::to_string(w) + ", outside [0, 1]");
    const uint32_t q = fixed_point(w);
    raw[3 * i] = static_cast<unsigned char>(q & 0xff);
    raw[3 * i + 1] = static_cast<unsigned char>((q >> 8) & 0xff);
    raw[3 * i + 2] = static_cast<unsigned char>((q >> 16) & 0xff);
  }
  uLongf size = compressBound(static_cast<uLong>(raw.size()));
  std::vector<unsigned char> packed(size);
  if (compress2(packed.data(), &size, raw.data(), static_cast<uLong>(raw.size()), Z_BEST_COMPRESSION) != Z_OK)
    throw ValueError("pack_weights: zlib could not compress " + std::to_string(raw.size()) + " bytes");
  return base64(packed.data(), size);
}

std::string json_for_script(const nlohmann::json& data) {
  const std::string text = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xe2' && i + 2 < text.size() && text[i + 1] == '\x80' &&
               (text[i + 2] == '\xa8' || text[i + 2] == '\xa9')) {
      out += text[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";  // line and paragraph separators
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::string view_html(const nlohmann::json& data) {
  // The data goes in last: the CSS and JS are ours, the data may hold any text.
  std::string page = replace_marker(std::string(detail::page_html()), "/*ATTN_CSS*/", detail::viewer_css());
  page = replace_marker(std::move(page), "/*ATTN_JS*/", detail::viewer_js());
  return replace_marker(std::move(page), "/*ATTN_DATA*/", json_for_script(data));
}

void write_view_html(const nlohmann::json& data, const std::string& path) {
  io::write_file_atomically(path, view_html(data));
}

}  // namespace attn::viz
