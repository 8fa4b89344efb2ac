#pragma once
// Pictures with cairo: line plots (accuracy against length, one line per model) and
// attention heatmaps (one panel per head). The format follows the file extension:
// .png (raster, drawn at 2x for sharp text), .svg or .pdf (vector). Files are written
// atomically: a temporary file beside the target, then a rename, so a reader never sees
// half a picture. An unknown extension throws ValueError listing the valid ones; a file
// that cannot be written throws IoError naming the path.
#include <optional>
#include <string>
#include <vector>

namespace attn::viz {

struct Series {
  std::string name;       // legend entry
  std::vector<double> x;  // same size as y; non-finite points leave a gap in the line
  std::vector<double> y;
};

// A named tick: its label at x = `at` (lines separated by '\n', e.g. "1-5\nn=1203").
struct Tick {
  double at = 0;
  std::string label;
};

struct LinePlot {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<Series> series;  // colours and markers are assigned in order
  // Fixed y range (e.g. 0 and 1 for accuracies); otherwise the data range rounded out to
  // ticks. When both are given, y_min < y_max is required.
  std::optional<double> y_min;
  std::optional<double> y_max;
  // Named x ticks (categories such as length buckets) instead of numeric ones; the x range
  // then spans the ticks and the data. Empty: numeric ticks from the data.
  std::vector<Tick> x_ticks = {};  // (an initialiser: brace-initialised plots may leave it out)
};

struct Heatmap {
  std::string title;
  std::vector<std::string> row_labels;  // R output tokens (one row each)
  std::vector<std::string> col_labels;  // C source tokens (one column each)
  // One panel per head: R*C values, row-major (row = output step), each in [0, 1]
  // (values within 1e-3 outside are clamped; NaN or anything further out is an error).
  std::vector<std::vector<float>> panels;
  // Empty, or one title per panel. Empty with several panels titles them "head 1", ...
  std::vector<std::string> panel_titles;
  // Optional: a strip under each panel whose time axis is the columns' (a log-mel spectrogram
  // under an alignment over listener frames): strip_rows rows, row 0 drawn lowest (the lowest
  // mel bin), of C·k columns, k >= 1 strip columns to one heatmap column (input frames per
  // listener frame), row-major by strip column: strip[col · strip_rows + row] (a [frames, bins]
  // feature matrix as it is). Any finite values, grey from the strip's minimum (black) to its
  // maximum (white).
  std::vector<float> strip;
  int64_t strip_rows = 0;
  std::string strip_label;  // the strip's name beside it, e.g. "log-mel"
  // Optional: one entry per row, the column where that output step stopped (online attention),
  // drawn as a red dot in every panel and a red tick on the strip; -1 where it stopped nowhere.
  std::vector<int64_t> marks;
};

// A 800x500 (logical) plot with ticks, gridlines, a legend and distinct colours and markers.
// Throws ValueError for a bad extension, x/y of different sizes, y_min >= y_max, or a
// non-finite x tick.
void write_line_plot(const LinePlot& plot, const std::string& path);

// The most rows or columns a heatmap draws: at the smallest cell (4 units; a PNG has 2
// pixels per unit) a longer axis would pass cairo's 32767-pixel limit on a picture's side.
inline constexpr int64_t kHeatmapMaxCells = 4000;

// Panels laid out in a grid, row and column token labels, a viridis colour bar from 0 to 1.
// Throws ValueError for a bad extension, no rows/columns/panels, more than kHeatmapMaxCells
// rows or columns, a panel whose size is
// not R*C, a panel_titles count that is neither 0 nor the number of panels, a bad value, a
// strip that is not strip_rows × (a multiple of C) finite values, or marks that are neither
// empty nor one per row in [-1, C).
void write_heatmap(const Heatmap& map, const std::string& path);

// The sequential colour map used by heatmaps (viridis, interpolated from 11 samples):
// t in [0, 1] (clamped) to r, g, b in [0, 1].
void colormap_viridis(double t, double rgb[3]);

}  // namespace attn::viz
