// viz/html_view.h: the page of `attn view` (escaping, packed weights, atomic writes). The
// page's behaviour in a browser is tests/browser/view.test.mjs.
#include "attn/viz/html_view.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "attn/error.h"
#include "test_support.h"

namespace attn::viz {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

std::string unbase64(const std::string& text) {
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    buffer = (buffer << 6) | static_cast<uint32_t>(std::string_view(alphabet).find(c));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xff);
    }
  }
  return out;
}

// What viewer.js does: base64, inflate, 24-bit little-endian fixed point.
std::vector<double> unpack(const std::string& packed, size_t count) {
  const std::string deflated = unbase64(packed);
  std::string raw(3 * count, '\0');
  uLongf size = raw.size();
  EXPECT_EQ(uncompress(reinterpret_cast<Bytef*>(raw.data()), &size, reinterpret_cast<const Bytef*>(deflated.data()),
                       deflated.size()),
            Z_OK);
  EXPECT_EQ(size, raw.size());
  std::vector<double> out;
  for (size_t i = 0; i < count; ++i) {
    const auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(raw[3 * i + k])); };
    out.push_back((byte(0) | (byte(1) << 8) | (byte(2) << 16)) / 16777215.0);
  }
  return out;
}

TEST(HtmlView, PackedWeightsRoundTripWithin3e8) {
  std::vector<float> w = {0.0f, 1.0f, 0.5f, 1e-7f, 0.123456789f, 0.999999f, 1.0f + 1e-7f};
  for (int i = 0; i < 1000; ++i) w.push_back(static_cast<float>(std::fmod(i * 0.6180339887, 1.0)));
  const std::vector<double> back = unpack(pack_weights(w), w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    EXPECT_NEAR(back[i], std::min(static_cast<double>(w[i]), 1.0), 3e-8) << "weight " << i;
    EXPECT_EQ(back[i], packed_weight(w[i])) << "weight " << i;
  }
}

TEST(HtmlView, PackedWeightsRefuseValuesOutsideTheUnitInterval) {
  const std::vector<float> too_large = {0.5f, 1.5f}, negative = {-0.25f},
                           nan = {std::numeric_limits<float>::quiet_NaN()};
  EXPECT_THROW_MSG(pack_weights(too_large), ValueError, "weight 1 is 1.5");
  EXPECT_THROW_MSG(pack_weights(negative), ValueError, "outside [0, 1]");
  EXPECT_THROW_MSG(pack_weights(nan), ValueError, "outside [0, 1]");
}

TEST(HtmlView, JsonForScriptKeepsTokensAsData) {
  const json data = {{"tokens", {"</script><script>alert(1)</script>", "a & b", "\"q\"", "x\u2028y"}}};
  const std::string text = json_for_script(data);
  EXPECT_EQ(text.find('<'), std::string::npos) << text;
  EXPECT_EQ(text.find('>'), std::string::npos) << text;
  EXPECT_EQ(text.find('&'), std::string::npos) << text;
  EXPECT_EQ(text.find("\xe2\x80\xa8"), std::string::npos) << text;
  EXPECT_EQ(json::parse(text), data);  // the escapes are JSON: the data comes back unchanged
}

TEST(HtmlView, PageInlinesTheAssetsAndTheDataOnce) {
  const std::string page = view_html({{"kind", "run"}, {"title", "</script><b>x</b>"}, {"runs", json::array()}});
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("window.attnView"), std::string::npos) << "viewer.js is not inlined";
  EXPECT_NE(page.find("--accent"), std::string::npos) << "viewer.css is not inlined";
  EXPECT_EQ(page.find("/*ATTN_"), std::string::npos) << "a marker is left";
  EXPECT_EQ(page.find("</script><b>"), std::string::npos) << "the data broke out of its <script>";
  EXPECT_NE(page.find("\\u003c/script\\u003e\\u003cb\\u003ex"), std::string::npos);
  EXPECT_EQ(page.find("http://"), page.find("http://www.w3.org/2000/svg"))
      << "a network address besides the SVG namespace";
}

TEST(HtmlView, UnwritablePathIsAnIoErrorAndLeavesNoFile) {
  const fs::path dir = fs::temp_directory_path() / ("attn_html_view_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string missing = (dir / "no" / "view.html").string();
  const json run = {{"kind", "run"}, {"runs", json::array()}};
  EXPECT_THROW_MSG(write_view_html(run, missing), IoError, missing);
  EXPECT_FALSE(fs::exists(missing));
  const std::string ok = (dir / "view.html").string();
  write_view_html(run, ok);
  std::ifstream in(ok);
  std::stringstream all;
  all << in.rdbuf();
  EXPECT_EQ(all.str(), view_html(run));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace attn::viz
