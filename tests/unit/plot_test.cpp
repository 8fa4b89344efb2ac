#include "attn/viz/plot.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_support.h"

namespace attn::viz {
namespace {

namespace fs = std::filesystem;

class PlotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "attn_plot_test_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    // Set ATTN_KEEP_PLOTS=1 to look at the pictures.
    if (std::getenv("ATTN_KEEP_PLOTS") != nullptr) {
      std::printf("pictures kept in %s\n", dir_.c_str());
      return;
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::vector<std::string> files() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  fs::path dir_;
};

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// PNG width and height from the IHDR chunk.
std::pair<uint32_t, uint32_t> png_size(const std::string& bytes) {
  const auto be32 = [&](size_t at) {
    return (uint32_t(uint8_t(bytes[at])) << 24) | (uint32_t(uint8_t(bytes[at + 1])) << 16) |
           (uint32_t(uint8_t(bytes[at + 2])) << 8) | uint32_t(uint8_t(bytes[at + 3]));
  };
  return {be32(16), be32(20)};
}

bool is_png(const std::string& bytes) { return bytes.size() > 24 && bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0; }

LinePlot accuracy_plot() {
  LinePlot plot;
  plot.title = "copy: token accuracy by length";
  plot.x_label = "source length";
  plot.y_label = "token accuracy";
  plot.y_min = 0.0;
  plot.y_max = 1.0;
  const std::vector<double> lengths = {5, 10, 20, 40, 80};
  plot.series.push_back({"none", lengths, {0.86, 0.62, 0.35, 0.15, 0.07}});
  plot.series.push_back({"bahdanau", lengths, {0.999, 0.998, 0.995, 0.99, 0.97}});
  plot.series.push_back({"luong", lengths, {0.998, 0.997, 0.99, 0.985, 0.96}});
  return plot;
}

Heatmap diagonal_heatmap(int heads) {
  Heatmap map;
  map.title = "alignment";
  map.col_labels = {"5", "9", "3", "17", "4"};
  map.row_labels = {"5", "9", "3", "17", "4", "<eos>"};
  for (int h = 0; h < heads; ++h) {
    std::vector<float> w(6 * 5, 0.0f);
    for (int r = 0; r < 6; ++r) {
      for (int c = 0; c < 5; ++c) w[r * 5 + c] = (r == c || (r == 5 && c == 4)) ? 0.8f : 0.05f;
    }
    map.panels.push_back(w);
  }
  return map;
}

TEST_F(PlotTest, LinePlotPngAndSvg) {
  const LinePlot plot = accuracy_plot();
  write_line_plot(plot, path("acc.png"));
  write_line_plot(plot, path("acc.SVG"));  // extension case does not matter
  write_line_plot(plot, path("acc.pdf"));
  EXPECT_EQ(files(), (std::vector<std::string>{"acc.SVG", "acc.pdf", "acc.png"}));  // no temporaries left

  const std::string png = read_all(path("acc.png"));
  ASSERT_TRUE(is_png(png)) << "not a PNG, " << png.size() << " bytes";
  EXPECT_EQ(png_size(png), (std::pair<uint32_t, uint32_t>{1600, 1000}));  // 800x500 at 2x
  EXPECT_GT(png.size(), 10000u);                                          // a picture, not a blank canvas

  const std::string svg = read_all(path("acc.SVG"));
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u) << svg.substr(0, 100);
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("width=\"800"), std::string::npos);
  const std::string pdf = read_all(path("acc.pdf"));
  EXPECT_EQ(pdf.rfind("%PDF-", 0), 0u);
}

TEST_F(PlotTest, SvgCarriesTheWords) {
  // cairo draws SVG text as glyph outlines; the title, axis labels and series names are
  // also written as <title>/<desc> so the file can be searched.
  LinePlot plot = accuracy_plot();
  plot.series[0].name = "none <baseline> & co";
  write_line_plot(plot, path("a.svg"));
  const std::string svg = read_all(path("a.svg"));
  EXPECT_NE(svg.find("<title>copy: token accuracy by length</title>"), std::string::npos);
  EXPECT_NE(svg.find("<desc>line plot; x: source length; y: token accuracy; series: none &lt;baseline&gt; &amp; co, "
                     "bahdanau, luong</desc>"),
            std::string::npos)
      << svg.substr(0, 600);
  // Tags balance: as many <g ...> as </g>, one <svg and one </svg>.
  const auto count = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t at = svg.find(needle); at != std::string::npos; at = svg.find(needle, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("<svg"), 1u);
  EXPECT_EQ(count("</svg>"), 1u);
  EXPECT_EQ(count("<g ") + count("<g>"), count("</g>"));
  EXPECT_EQ(count("<title>"), count("</title>"));
}

TEST_F(PlotTest, LinePlotEdgeCases) {
  LinePlot plot;
  plot.series.push_back({"single point", {3}, {0.5}});
  plot.series.push_back({"gap", {1, 2, 3, 4}, {0.1, NAN, 0.3, INFINITY}});
  plot.series.push_back({"empty", {}, {}});
  write_line_plot(plot, path("edge.png"));
  EXPECT_TRUE(is_png(read_all(path("edge.png"))));
  LinePlot nothing;  // no series at all: empty axes
  write_line_plot(nothing, path("nothing.svg"));
  EXPECT_NE(read_all(path("nothing.svg")).find("</svg>"), std::string::npos);
  LinePlot many;
  for (int k = 0; k < 12; ++k) {
    Series s{"series " + std::to_string(k), {}, {}};
    for (int i = 0; i < 100; ++i) {
      s.x.push_back(i * 1000.0);
      s.y.push_back(-5 + k + std::sin(i * 0.1));
    }
    many.series.push_back(s);
  }
  write_line_plot(many, path("many.png"));
  EXPECT_TRUE(is_png(read_all(path("many.png"))));
}

TEST_F(PlotTest, LinePlotErrors) {
  LinePlot plot = accuracy_plot();
  EXPECT_THROW_MSG(
      write_line_plot(plot, path("acc.jpg")), ValueError,
      "write_line_plot: unsupported picture format '.jpg' for '" + path("acc.jpg") + "' (valid: .png, .svg, .pdf)");
  EXPECT_THROW_MSG(write_line_plot(plot, path("acc")), ValueError, "'no extension'");
  EXPECT_THROW_MSG(write_line_plot(plot, path("dir.png/acc")), ValueError, "(valid: .png, .svg, .pdf)");
  const std::string missing = path("no/such/dir/acc.png");
  EXPECT_THROW_MSG(write_line_plot(plot, missing), IoError,
                   "write_line_plot: " + missing + ": cannot create a temporary file in '" + path("no/such/dir") +
                       "': No such file or directory");
  // A parent that is a file, and a target that is a directory (refused before anything is
  // written).
  { std::ofstream(path("file.txt")) << "x"; }
  EXPECT_THROW_MSG(write_line_plot(plot, path("file.txt/acc.png")), IoError,
                   path("file.txt/acc.png") + ": cannot write: Not a directory");
  fs::create_directory(path("taken.svg"));
  EXPECT_THROW_MSG(write_line_plot(plot, path("taken.svg")), IoError,
                   path("taken.svg") + ": is a directory, not a file");
  EXPECT_EQ(files(), (std::vector<std::string>{"file.txt", "taken.svg"}));
  EXPECT_TRUE(fs::is_empty(path("taken.svg")));
  fs::remove(path("file.txt"));
  fs::remove(path("taken.svg"));
  LinePlot bad = plot;
  bad.series[2].y.pop_back();
  EXPECT_THROW_MSG(write_line_plot(bad, path("bad.png")), ValueError,
                   "series 2 ('luong') has 5 x values but 4 y values");
  LinePlot inverted = plot;
  inverted.y_min = 1.0;
  inverted.y_max = 0.0;
  EXPECT_THROW_MSG(write_line_plot(inverted, path("bad.png")), ValueError, "y_min 1 must be less than y_max 0");
  EXPECT_TRUE(files().empty()) << "a failed write left files behind";
}

TEST_F(PlotTest, NamedXTicksWithTwoLineLabels) {
  LinePlot plot;
  plot.x_label = "source words";
  plot.series.push_back({"bahdanau", {0, 1, 2}, {30.5, 22.0, NAN}});  // an empty bucket: a gap
  plot.x_ticks = {{0, "1-5\nn=120"}, {1, "6-10\nn=40"}, {2, "11+\nn=0"}};
  write_line_plot(plot, path("named.png"));
  write_line_plot(plot, path("named.svg"));
  const std::string png = read_all(path("named.png"));
  ASSERT_TRUE(is_png(png));
  EXPECT_EQ(png_size(png), (std::pair<uint32_t, uint32_t>{1600, 1000}));
  EXPECT_NE(read_all(path("named.svg")).find("series: bahdanau; x ticks: 1-5 n=120, 6-10 n=40, 11+ n=0</desc>"),
            std::string::npos);
  // The labels are drawn: other counts give another picture.
  plot.x_ticks[0].label = "1-5\nn=999";
  write_line_plot(plot, path("other.png"));
  EXPECT_NE(read_all(path("other.png")), png);
  plot.x_ticks[1].at = NAN;
  EXPECT_THROW_MSG(write_line_plot(plot, path("bad.png")), ValueError,
                   "write_line_plot: x tick '6-10 n=40' is not at a finite x");
}

TEST_F(PlotTest, UnwritableDirectoryLeavesNoFile) {
  const fs::path locked = dir_ / "locked";
  fs::create_directory(locked);
  fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
  const std::string target = (locked / "acc.png").string();
  if (::access(locked.c_str(), W_OK) == 0) {
    fs::permissions(locked, fs::perms::owner_all);
    GTEST_SKIP() << "running as root: permissions are not enforced";
  }
  EXPECT_THROW_MSG(write_line_plot(accuracy_plot(), target), IoError,
                   "write_line_plot: " + target + ": cannot create a temporary file in '" + locked.string() +
                       "': Permission denied");
  EXPECT_THROW_MSG(write_heatmap(diagonal_heatmap(1), (locked / "h.svg").string()), IoError,
                   "write_heatmap: " + (locked / "h.svg").string() + ": cannot create a temporary file");
  fs::permissions(locked, fs::perms::owner_all);
  EXPECT_TRUE(fs::is_empty(locked));
}

TEST_F(PlotTest, OverwritesAtomically) {
  write_line_plot(accuracy_plot(), path("p.png"));
  LinePlot other = accuracy_plot();
  other.series.pop_back();
  write_line_plot(other, path("p.png"));
  EXPECT_EQ(files(), (std::vector<std::string>{"p.png"}));
  EXPECT_TRUE(is_png(read_all(path("p.png"))));
}

TEST_F(PlotTest, HeatmapSingleAndMultiHead) {
  write_heatmap(diagonal_heatmap(1), path("align.png"));
  Heatmap four = diagonal_heatmap(4);
  write_heatmap(four, path("heads.png"));
  four.panel_titles = {"h1", "h2", "h3", "h4"};
  write_heatmap(four, path("heads.svg"));
  const std::string one = read_all(path("align.png"));
  const std::string many = read_all(path("heads.png"));
  ASSERT_TRUE(is_png(one));
  ASSERT_TRUE(is_png(many));
  // Four panels side by side: wider than one, about as tall.
  EXPECT_GT(png_size(many).first, 2 * png_size(one).first);
  const std::string svg = read_all(path("heads.svg"));
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("<title>alignment</title>"), std::string::npos);
  EXPECT_NE(svg.find("rows (output): 5 9 3 17 4 &lt;eos&gt;; columns (source): 5 9 3 17 4; panels: h1, h2, h3, h4"),
            std::string::npos);
  // The viridis colour bar is a gradient with viridis' end colours.
  EXPECT_NE(svg.find("linearGradient"), std::string::npos);
  EXPECT_NE(svg.find("rgb(26.666667%,0.392157%,32.941176%)"), std::string::npos) << "viridis(0) = #440154";
}

TEST_F(PlotTest, HeatmapLargeGrid) {
  // 81 x 80 alignment (length 80 plus EOS): labels thin out, the picture stays bounded.
  Heatmap map;
  for (int r = 0; r < 81; ++r) map.row_labels.push_back(std::to_string(3 + r % 29));
  for (int c = 0; c < 80; ++c) map.col_labels.push_back(std::to_string(3 + c % 29));
  std::vector<float> w(81 * 80);
  for (int r = 0; r < 81; ++r)
    for (int c = 0; c < 80; ++c) w[r * 80 + c] = std::exp(-0.5f * float((r - c) * (r - c)));
  map.panels.push_back(w);
  write_heatmap(map, path("big.png"));
  const auto [width, height] = png_size(read_all(path("big.png")));
  EXPECT_LT(width, 2 * 1000u);
  EXPECT_LT(height, 2 * 1000u);
}

TEST_F(PlotTest, HeatmapErrors) {
  Heatmap map = diagonal_heatmap(2);
  EXPECT_THROW_MSG(write_heatmap(map, path("h.gif")), ValueError, "write_heatmap: unsupported picture format '.gif'");
  Heatmap wrong = map;
  wrong.panels[1].pop_back();
  EXPECT_THROW_MSG(write_heatmap(wrong, path("h.png")), ValueError,
                   "write_heatmap: panel 1 has 29 values, expected rows*cols = 6*5 = 30");
  Heatmap titles = map;
  titles.panel_titles = {"only one"};
  EXPECT_THROW_MSG(write_heatmap(titles, path("h.png")), ValueError, "1 panel titles for 2 panels");
  Heatmap value = map;
  value.panels[0][7] = 1.5f;
  EXPECT_THROW_MSG(write_heatmap(value, path("h.png")), ValueError,
                   "panel 0 value 1.5 at row 1, column 2 is outside [0, 1]");
  value.panels[0][7] = NAN;
  EXPECT_THROW_MSG(write_heatmap(value, path("h.png")), ValueError, "value nan at row 1, column 2");
  Heatmap empty = map;
  empty.panels.clear();
  EXPECT_THROW_MSG(write_heatmap(empty, path("h.png")), ValueError, "no panels");
  Heatmap no_rows = map;
  no_rows.row_labels.clear();
  EXPECT_THROW_MSG(write_heatmap(no_rows, path("h.png")), ValueError, "no rows");
  EXPECT_TRUE(files().empty());
  // Rounding just past 1 is accepted (clamped).
  Heatmap rounding = map;
  rounding.panels[0][0] = 1.0000002f;
  EXPECT_NO_THROW(write_heatmap(rounding, path("ok.png")));
}

// A spectrogram-like strip under the columns (4 strip columns to each) and stop marks.
Heatmap heatmap_with_strip() {
  Heatmap map = diagonal_heatmap(1);
  map.strip_rows = 8;
  map.strip_label = "log-mel";
  for (int i = 0; i < 5 * 4 * 8; ++i) map.strip.push_back(std::sin(0.1f * static_cast<float>(i)) * 3.0f - 7.0f);
  map.marks = {0, 1, 2, 3, 4, -1};
  return map;
}

TEST_F(PlotTest, HeatmapStripAndMarks) {
  write_heatmap(diagonal_heatmap(1), path("plain.png"));
  Heatmap map = heatmap_with_strip();
  write_heatmap(map, path("strip.png"));
  write_heatmap(map, path("strip.svg"));
  const auto plain = png_size(read_all(path("plain.png"))), strip = png_size(read_all(path("strip.png")));
  EXPECT_EQ(strip.second, plain.second + 2 * 106) << "the strip (100 units) and its gap (6) under the cells, at 2x";
  const std::string svg = read_all(path("strip.svg"));
  EXPECT_NE(svg.find("under the columns: log-mel; red dots: where each output step stopped"), std::string::npos);
  EXPECT_NE(svg.find("<image"), std::string::npos) << "the strip is one image";
  map.marks.clear();
  write_heatmap(map, path("unmarked.svg"));
  // Five marks drawn (the sixth row stopped nowhere): a red dot per marked row and a tick on the strip.
  const std::string red = "rgb(90%,10%,10%)";
  size_t count = 0;
  for (size_t at = svg.find(red); at != std::string::npos; at = svg.find(red, at + 1)) ++count;
  EXPECT_EQ(count, 10u);
  EXPECT_EQ(read_all(path("unmarked.svg")).find(red), std::string::npos);
}

TEST_F(PlotTest, HeatmapStripAndMarkErrors) {
  Heatmap map = heatmap_with_strip();
  Heatmap odd = map;
  odd.strip.resize(odd.strip.size() - 8);  // 19 strip columns: not a multiple of the 5 columns
  EXPECT_THROW_MSG(
      write_heatmap(odd, path("h.png")), ValueError,
      "write_heatmap: the strip has 152 values for 8 rows; expected strip_rows x (a multiple of cols = 5)");
  Heatmap no_rows = map;
  no_rows.strip_rows = 0;
  EXPECT_THROW_MSG(write_heatmap(no_rows, path("h.png")), ValueError, "the strip has 160 values for 0 rows");
  Heatmap nan = map;
  nan.strip[13] = NAN;
  EXPECT_THROW_MSG(write_heatmap(nan, path("h.png")), ValueError, "strip value nan at column 1, row 5 is not finite");
  Heatmap few = map;
  few.marks.pop_back();
  EXPECT_THROW_MSG(write_heatmap(few, path("h.png")), ValueError, "5 marks for 6 rows (give none or one per row)");
  Heatmap far = map;
  far.marks[2] = 5;
  EXPECT_THROW_MSG(write_heatmap(far, path("h.png")), ValueError, "mark 5 of row 2 is outside [-1, 5)");
  EXPECT_TRUE(files().empty());
}

TEST(Colormap, ViridisEndsAndMonotoneLightness) {
  double rgb[3];
  colormap_viridis(0.0, rgb);
  EXPECT_NEAR(rgb[0], 0x44 / 255.0, 1e-9);
  EXPECT_NEAR(rgb[1], 0x01 / 255.0, 1e-9);
  EXPECT_NEAR(rgb[2], 0x54 / 255.0, 1e-9);
  colormap_viridis(1.0, rgb);
  EXPECT_NEAR(rgb[0], 0xfd / 255.0, 1e-9);
  EXPECT_NEAR(rgb[1], 0xe7 / 255.0, 1e-9);
  EXPECT_NEAR(rgb[2], 0x25 / 255.0, 1e-9);
  colormap_viridis(2.0, rgb);  // clamped
  EXPECT_NEAR(rgb[0], 0xfd / 255.0, 1e-9);
  // Perceptually sequential: luminance rises with t.
  double previous = -1;
  for (int i = 0; i <= 100; ++i) {
    colormap_viridis(i / 100.0, rgb);
    const double luma = 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2];
    EXPECT_GT(luma, previous) << "t = " << i / 100.0;
    previous = luma;
  }
}

}  // namespace
}  // namespace attn::viz
