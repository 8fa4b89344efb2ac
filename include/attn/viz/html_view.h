#pragma once
// The self-contained HTML page of `attn view`: the viewer's template, CSS and JavaScript
// (viewer/ in the repository, compiled into the library by CMake) with the view's data
// inlined as JSON. The page makes no network request and opens from file://.
//
// The data document (explain/attention_view.h builds it; viewer/viewer.js reads it):
//   {"kind": "seq2seq" | "transformer" | "classifier" | "run", "title": "...", ...}
// docs/viewer.md describes each kind's fields.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attn::viz {

// JSON text that is safe inside a <script> element: '<', '>' and '&' (which can only occur
// inside JSON strings) and U+2028 / U+2029 become \u escapes, so a token "</script>" stays
// data.
std::string json_for_script(const nlohmann::json& data);

// Attention weights (each in [0, 1]) packed for the page: each as a 24-bit fixed-point
// number round(w · (2^24 − 1)) (error <= 3e-8), 3 bytes little-endian, zlib-deflated, then
// base64. About a quarter of the JSON text's size; viewer.js unpacks it with the browser's
// DecompressionStream. ValueError for a weight outside [0, 1] or not finite.
std::string pack_weights(const std::vector<float>& weights);
// The weight pack_weights stores for w (what the page shows).
double packed_weight(float w);

// The whole page for `data`.
std::string view_html(const nlohmann::json& data);

// view_html written to `path` atomically (io::AtomicFile): IoError naming the path when it
// cannot be written, and then no file, or the old one, is left there.
void write_view_html(const nlohmann::json& data, const std::string& path);

}  // namespace attn::viz
