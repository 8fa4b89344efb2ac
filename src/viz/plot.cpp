#include "attn/viz/plot.h"

#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <cairo.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>

#include "attn/error.h"
#include "attn/io/atomic_file.h"

namespace attn::viz {

namespace {

// ---------------------------------------------------------------------------------------
// Output: render into memory through a cairo stream, then write atomically.

enum class Format { png, svg, pdf };

constexpr const char* kValidExtensions = ".png, .svg, .pdf";
constexpr double kPngScale = 2.0;  // PNG pixels per logical unit (sharp text on any screen)

Format format_for(const char* op, const std::string& path) {
  const auto slash = path.find_last_of('/');
  const auto dot = path.find_last_of('.');
  std::string ext;
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) ext = path.substr(dot);
  std::string lower = ext;
  for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (lower == ".png") return Format::png;
  if (lower == ".svg") return Format::svg;
  if (lower == ".pdf") return Format::pdf;
  throw ValueError(fmt::format("{}: unsupported picture format '{}' for '{}' (valid: {})", op,
                               ext.empty() ? std::string("no extension") : ext, path, kValidExtensions));
}

cairo_status_t append_to_string(void* closure, const unsigned char* data, unsigned int length) {
  auto* out = static_cast<std::string*>(closure);
  try {
    out->append(reinterpret_cast<const char*>(data), length);
  } catch (...) {
    return CAIRO_STATUS_NO_MEMORY;
  }
  return CAIRO_STATUS_SUCCESS;
}

struct SurfaceDeleter {
  void operator()(cairo_surface_t* s) const { cairo_surface_destroy(s); }
};
struct ContextDeleter {
  void operator()(cairo_t* c) const { cairo_destroy(c); }
};
using SurfacePtr = std::unique_ptr<cairo_surface_t, SurfaceDeleter>;
using ContextPtr = std::unique_ptr<cairo_t, ContextDeleter>;

// Draws with `draw(cr)` on a width x height (logical units) canvas in `format`; returns the
// encoded file contents.
template <typename Draw>
std::string render(const char* op, Format format, double width, double height, Draw&& draw) {
  std::string bytes;
  SurfacePtr surface;
  if (format == Format::png) {
    surface.reset(cairo_image_surface_create(CAIRO_FORMAT_ARGB32, static_cast<int>(std::ceil(width * kPngScale)),
                                             static_cast<int>(std::ceil(height * kPngScale))));
    cairo_surface_set_device_scale(surface.get(), kPngScale, kPngScale);
  } else if (format == Format::svg) {
    surface.reset(cairo_svg_surface_create_for_stream(append_to_string, &bytes, width, height));
  } else {
    surface.reset(cairo_pdf_surface_create_for_stream(append_to_string, &bytes, width, height));
  }
  if (cairo_surface_status(surface.get()) != CAIRO_STATUS_SUCCESS) {
    throw IoError(fmt::format("{}: cairo could not create a {:.0f}x{:.0f} surface: {}", op, width, height,
                              cairo_status_to_string(cairo_surface_status(surface.get()))));
  }
  {
    ContextPtr cr(cairo_create(surface.get()));
    // White background (PNG would otherwise be transparent).
    cairo_set_source_rgb(cr.get(), 1, 1, 1);
    cairo_paint(cr.get());
    draw(cr.get());
    if (cairo_status(cr.get()) != CAIRO_STATUS_SUCCESS) {
      throw IoError(fmt::format("{}: drawing failed: {}", op, cairo_status_to_string(cairo_status(cr.get()))));
    }
  }
  if (format == Format::png) {
    cairo_surface_flush(surface.get());
    const cairo_status_t status = cairo_surface_write_to_png_stream(surface.get(), append_to_string, &bytes);
    if (status != CAIRO_STATUS_SUCCESS) {
      throw IoError(fmt::format("{}: PNG encoding failed: {}", op, cairo_status_to_string(status)));
    }
  } else {
    cairo_surface_finish(surface.get());
    if (cairo_surface_status(surface.get()) != CAIRO_STATUS_SUCCESS) {
      throw IoError(
          fmt::format("{}: vector output failed: {}", op, cairo_status_to_string(cairo_surface_status(surface.get()))));
    }
  }
  return bytes;
}

// The picture written through io::AtomicFile, its errors named after the op.
void write_picture(const char* op, const std::string& path, const std::string& bytes) {
  try {
    io::write_file_atomically(path, bytes);
  } catch (const IoError& e) {
    throw IoError(fmt::format("{}: {}", op, e.what()));
  }
}

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

// cairo's SVG surface draws text as glyph outlines, so the words are not in the file.
// A <title> and <desc> right after the <svg> tag put them back for search, screen
// readers and tests.
void add_svg_text(std::string& svg, const std::string& title, const std::string& desc) {
  const size_t open = svg.find("<svg");
  if (open == std::string::npos) return;
  const size_t end = svg.find('>', open);
  if (end == std::string::npos) return;
  svg.insert(end + 1, "\n<title>" + xml_escape(title) + "</title>\n<desc>" + xml_escape(desc) + "</desc>");
}

// ---------------------------------------------------------------------------------------
// Drawing helpers.

constexpr const char* kFont = "DejaVu Sans";

// The grey 1-px frame around a w x h box at (x, y), on the pixel grid.
void stroke_frame(cairo_t* cr, double x, double y, double w, double h) {
  cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
  cairo_set_line_width(cr, 1.0);
  cairo_rectangle(cr, x - 0.5, y - 0.5, w + 1, h + 1);
  cairo_stroke(cr);
}

void set_font(cairo_t* cr, double size, bool bold = false) {
  cairo_select_font_face(cr, kFont, CAIRO_FONT_SLANT_NORMAL, bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
}

double text_width(cairo_t* cr, const std::string& text) {
  cairo_text_extents_t ext;
  cairo_text_extents(cr, text.c_str(), &ext);
  return ext.x_advance;
}

// Draws `text` with its anchor at (x, y): ha 0 = left, 0.5 = centre, 1 = right;
// va 0 = top, 0.5 = middle, 1 = bottom (of the font's ascent..descent box).
// `angle` rotates about the anchor (radians, -pi/2 reads bottom to top).
void draw_text(cairo_t* cr, double x, double y, const std::string& text, double ha, double va, double angle = 0) {
  cairo_font_extents_t fe;
  cairo_font_extents(cr, &fe);
  const double w = text_width(cr, text);
  const double h = fe.ascent + fe.descent;
  cairo_save(cr);
  cairo_translate(cr, x, y);
  cairo_rotate(cr, angle);
  cairo_move_to(cr, -ha * w, -va * h + fe.ascent);
  cairo_show_text(cr, text.c_str());
  cairo_restore(cr);
}

double font_height(cairo_t* cr) {
  cairo_font_extents_t fe;
  cairo_font_extents(cr, &fe);
  return fe.ascent + fe.descent;
}

struct Rgb {
  double r, g, b;
};

// Tableau 10: distinct, colour-blind-friendlier than the primaries.
constexpr Rgb kPalette[] = {
    {0.122, 0.467, 0.706}, {1.000, 0.498, 0.055}, {0.173, 0.627, 0.173}, {0.839, 0.153, 0.157}, {0.580, 0.404, 0.741},
    {0.549, 0.337, 0.294}, {0.890, 0.467, 0.761}, {0.498, 0.498, 0.498}, {0.737, 0.741, 0.133}, {0.090, 0.745, 0.812},
};
constexpr int kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);
constexpr int kMarkerKinds = 7;

// Marker `kind` centred at (x, y) with radius r, filled in the current colour
// (cross and plus are stroked).
void draw_marker(cairo_t* cr, int kind, double x, double y, double r) {
  cairo_new_path(cr);
  switch (kind % kMarkerKinds) {
    case 0:  // circle
      cairo_arc(cr, x, y, r, 0, 2 * M_PI);
      cairo_fill(cr);
      break;
    case 1:  // square
      cairo_rectangle(cr, x - 0.85 * r, y - 0.85 * r, 1.7 * r, 1.7 * r);
      cairo_fill(cr);
      break;
    case 2:  // triangle up
      cairo_move_to(cr, x, y - 1.15 * r);
      cairo_line_to(cr, x + r, y + 0.75 * r);
      cairo_line_to(cr, x - r, y + 0.75 * r);
      cairo_close_path(cr);
      cairo_fill(cr);
      break;
    case 3:  // diamond
      cairo_move_to(cr, x, y - 1.2 * r);
      cairo_line_to(cr, x + r, y);
      cairo_line_to(cr, x, y + 1.2 * r);
      cairo_line_to(cr, x - r, y);
      cairo_close_path(cr);
      cairo_fill(cr);
      break;
    case 4:  // triangle down
      cairo_move_to(cr, x, y + 1.15 * r);
      cairo_line_to(cr, x + r, y - 0.75 * r);
      cairo_line_to(cr, x - r, y - 0.75 * r);
      cairo_close_path(cr);
      cairo_fill(cr);
      break;
    case 5:  // cross
      cairo_set_line_width(cr, 2.0);
      cairo_move_to(cr, x - r, y - r);
      cairo_line_to(cr, x + r, y + r);
      cairo_move_to(cr, x - r, y + r);
      cairo_line_to(cr, x + r, y - r);
      cairo_stroke(cr);
      break;
    default:  // plus
      cairo_set_line_width(cr, 2.0);
      cairo_move_to(cr, x - 1.2 * r, y);
      cairo_line_to(cr, x + 1.2 * r, y);
      cairo_move_to(cr, x, y - 1.2 * r);
      cairo_line_to(cr, x, y + 1.2 * r);
      cairo_stroke(cr);
      break;
  }
}

// 1, 2, 2.5 or 5 times a power of ten, close to `raw`.
double nice_step(double raw) {
  if (!(raw > 0) || !std::isfinite(raw)) return 1.0;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / p;
  double nice = 10;
  if (f <= 1.0)
    nice = 1;
  else if (f <= 2.0)
    nice = 2;
  else if (f <= 2.5)
    nice = 2.5;
  else if (f <= 5.0)
    nice = 5;
  return nice * p;
}

struct Axis {
  double lo = 0, hi = 1;
  std::vector<double> ticks;
  int decimals = 0;
};

// Ticks for [lo, hi]; when `extend`, the range grows to whole ticks.
Axis make_axis(double lo, double hi, bool extend, int target_ticks) {
  if (!(hi > lo)) {
    const double pad = lo == 0 ? 1.0 : std::fabs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  Axis axis;
  const double step = nice_step((hi - lo) / target_ticks);
  if (extend) {
    lo = std::floor(lo / step + 1e-9) * step;
    hi = std::ceil(hi / step - 1e-9) * step;
  }
  axis.lo = lo;
  axis.hi = hi;
  const double first = std::ceil(lo / step - 1e-9) * step;
  for (int i = 0; i < 1000; ++i) {
    const double t = first + i * step;
    if (t > hi + step * 1e-9) break;
    axis.ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
  }
  const double frac_digits = -std::floor(std::log10(step) + 1e-9);
  axis.decimals = static_cast<int>(std::clamp(frac_digits, 0.0, 10.0));
  if (std::fabs(step / std::pow(10.0, std::floor(std::log10(step))) - 2.5) < 1e-6) {
    axis.decimals += 1;  // 2.5, 0.25, ...
  }
  // Whole-number steps such as 25 need no decimals.
  if (std::fabs(step - std::round(step)) < 1e-9 * step) axis.decimals = 0;
  return axis;
}

std::string tick_label(double value, int decimals) { return fmt::format("{:.{}f}", value, decimals); }

// A tick label's lines joined by spaces (for messages and the SVG's description).
std::string one_line(std::string label) {
  std::replace(label.begin(), label.end(), '\n', ' ');
  return label;
}

// ---------------------------------------------------------------------------------------
// Line plot.

constexpr double kPlotWidth = 800;
constexpr double kPlotHeight = 500;
constexpr size_t kMaxMarkedPoints = 60;  // denser series get a plain line (markers would blot it)

void draw_line_plot(cairo_t* cr, const LinePlot& plot) {
  const double W = kPlotWidth, H = kPlotHeight;

  // Data ranges over finite points.
  double x_lo = INFINITY, x_hi = -INFINITY, y_lo = INFINITY, y_hi = -INFINITY;
  for (const auto& s : plot.series) {
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      x_lo = std::min(x_lo, s.x[i]);
      x_hi = std::max(x_hi, s.x[i]);
      y_lo = std::min(y_lo, s.y[i]);
      y_hi = std::max(y_hi, s.y[i]);
    }
  }
  for (const Tick& t : plot.x_ticks) {
    x_lo = std::min(x_lo, t.at);
    x_hi = std::max(x_hi, t.at);
  }
  if (!std::isfinite(x_lo)) x_lo = 0, x_hi = 1;
  if (!std::isfinite(y_lo)) y_lo = 0, y_hi = 1;
  Axis xa = make_axis(x_lo, x_hi, plot.x_ticks.empty(), 8);
  // The x tick labels, each a list of lines: the named ticks' or the axis's numbers.
  std::vector<std::pair<double, std::vector<std::string>>> x_labels;
  if (plot.x_ticks.empty()) {
    for (double t : xa.ticks) x_labels.push_back({t, {tick_label(t, xa.decimals)}});
  } else {
    const double pad = (xa.hi - xa.lo) * 0.04;  // the end ticks' labels clear of the frame
    xa.lo -= pad;
    xa.hi += pad;
    xa.ticks.clear();
    for (const Tick& t : plot.x_ticks) {
      xa.ticks.push_back(t.at);
      std::vector<std::string> lines(1);
      for (char c : t.label) {
        if (c == '\n')
          lines.emplace_back();
        else
          lines.back().push_back(c);
      }
      x_labels.push_back({t.at, std::move(lines)});
    }
  }
  size_t x_label_lines = 1;
  for (const auto& l : x_labels) x_label_lines = std::max(x_label_lines, l.second.size());
  const double tick_line_h = 16;
  Axis ya;
  if (plot.y_min && plot.y_max) {
    ya = make_axis(*plot.y_min, *plot.y_max, false, 6);
  } else {
    double lo = plot.y_min.value_or(y_lo), hi = plot.y_max.value_or(y_hi);
    if (plot.y_min && hi <= lo) hi = lo + 1;
    if (plot.y_max && hi <= lo) lo = hi - 1;
    ya = make_axis(lo, hi, true, 6);
    if (plot.y_min) ya = make_axis(*plot.y_min, ya.hi, false, 6);
    if (plot.y_max) ya = make_axis(ya.lo, *plot.y_max, false, 6);
  }

  // Layout: title on top, y label and tick labels left, x ticks and label below, legend right.
  const double tick_font = 13, label_font = 14, title_font = 17, legend_font = 13;
  set_font(cr, tick_font);
  double y_tick_w = 0;
  for (double t : ya.ticks) y_tick_w = std::max(y_tick_w, text_width(cr, tick_label(t, ya.decimals)));
  set_font(cr, legend_font);
  double legend_text_w = 0;
  for (const auto& s : plot.series) legend_text_w = std::max(legend_text_w, text_width(cr, s.name));
  const double legend_line_h = 22;
  const double swatch_w = 34;
  const double legend_w = plot.series.empty() ? 0 : std::min(260.0, swatch_w + 8 + legend_text_w + 20);

  const double top = plot.title.empty() ? 20 : 48;
  const double left = 16 + (plot.y_label.empty() ? 0 : 24) + y_tick_w + 10;
  const double bottom = 30 + tick_line_h * static_cast<double>(x_label_lines - 1) + (plot.x_label.empty() ? 0 : 26);
  const double right = 24 + (legend_w > 0 ? legend_w + 16 : 0);
  const double px0 = left, px1 = W - right, py0 = top, py1 = H - bottom;

  // Data inset from the frame, so points on the range ends (accuracy 1.0) stay whole.
  const double inset = 10;
  const auto X = [&](double v) { return px0 + inset + (v - xa.lo) / (xa.hi - xa.lo) * (px1 - px0 - 2 * inset); };
  const auto Y = [&](double v) { return py1 - inset - (v - ya.lo) / (ya.hi - ya.lo) * (py1 - py0 - 2 * inset); };

  // Title.
  cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
  if (!plot.title.empty()) {
    set_font(cr, title_font, true);
    draw_text(cr, (px0 + px1) / 2, 14, plot.title, 0.5, 0);
  }

  // Plot area, gridlines and ticks.
  cairo_set_source_rgb(cr, 0.985, 0.985, 0.985);
  cairo_rectangle(cr, px0, py0, px1 - px0, py1 - py0);
  cairo_fill(cr);
  cairo_set_line_width(cr, 1.0);
  cairo_set_source_rgb(cr, 0.86, 0.86, 0.86);
  for (double t : xa.ticks) {
    const double x = std::round(X(t)) + 0.5;
    cairo_move_to(cr, x, py0);
    cairo_line_to(cr, x, py1);
  }
  for (double t : ya.ticks) {
    const double y = std::round(Y(t)) + 0.5;
    cairo_move_to(cr, px0, y);
    cairo_line_to(cr, px1, y);
  }
  cairo_stroke(cr);

  cairo_set_source_rgb(cr, 0.25, 0.25, 0.25);
  cairo_rectangle(cr, px0 + 0.5, py0 + 0.5, px1 - px0 - 1, py1 - py0 - 1);
  cairo_stroke(cr);
  set_font(cr, tick_font);
  for (const auto& [t, lines] : x_labels) {
    const double x = std::round(X(t)) + 0.5;
    cairo_move_to(cr, x, py1);
    cairo_line_to(cr, x, py1 + 5);
    cairo_stroke(cr);
    for (size_t k = 0; k < lines.size(); ++k)
      draw_text(cr, x, py1 + 8 + tick_line_h * static_cast<double>(k), lines[k], 0.5, 0);
  }
  for (double t : ya.ticks) {
    const double y = std::round(Y(t)) + 0.5;
    cairo_move_to(cr, px0 - 5, y);
    cairo_line_to(cr, px0, y);
    cairo_stroke(cr);
    draw_text(cr, px0 - 8, y, tick_label(t, ya.decimals), 1, 0.5);
  }

  // Axis labels.
  set_font(cr, label_font);
  cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
  if (!plot.x_label.empty()) draw_text(cr, (px0 + px1) / 2, H - 10, plot.x_label, 0.5, 1);
  if (!plot.y_label.empty()) draw_text(cr, 12, (py0 + py1) / 2, plot.y_label, 0.5, 0, -M_PI / 2);

  // Series, clipped to the plot area.
  cairo_save(cr);
  cairo_rectangle(cr, px0, py0, px1 - px0, py1 - py0);
  cairo_clip(cr);
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
  cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
  for (size_t k = 0; k < plot.series.size(); ++k) {
    const auto& s = plot.series[k];
    const Rgb c = kPalette[k % kPaletteSize];
    cairo_set_source_rgb(cr, c.r, c.g, c.b);
    cairo_set_line_width(cr, 2.2);
    bool pen_down = false;
    cairo_new_path(cr);
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) {
        pen_down = false;
        continue;
      }
      if (pen_down)
        cairo_line_to(cr, X(s.x[i]), Y(s.y[i]));
      else
        cairo_move_to(cr, X(s.x[i]), Y(s.y[i]));
      pen_down = true;
    }
    cairo_stroke(cr);
    if (s.x.size() <= kMaxMarkedPoints) {
      for (size_t i = 0; i < s.x.size(); ++i) {
        if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
        draw_marker(cr, static_cast<int>(k), X(s.x[i]), Y(s.y[i]), 4.5);
      }
    }
  }
  cairo_restore(cr);

  // Legend, right of the plot area.
  if (!plot.series.empty()) {
    const double lx = px1 + 16;
    const double ly = py0;
    const double lh = 10 + legend_line_h * static_cast<double>(plot.series.size());
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_rectangle(cr, lx + 0.5, ly + 0.5, legend_w, lh);
    cairo_fill_preserve(cr);
    cairo_set_source_rgb(cr, 0.75, 0.75, 0.75);
    cairo_set_line_width(cr, 1.0);
    cairo_stroke(cr);
    set_font(cr, legend_font);
    for (size_t k = 0; k < plot.series.size(); ++k) {
      const Rgb c = kPalette[k % kPaletteSize];
      const double cy = ly + 5 + legend_line_h * (static_cast<double>(k) + 0.5);
      cairo_set_source_rgb(cr, c.r, c.g, c.b);
      cairo_set_line_width(cr, 2.2);
      cairo_move_to(cr, lx + 8, cy);
      cairo_line_to(cr, lx + 8 + swatch_w, cy);
      cairo_stroke(cr);
      if (plot.series[k].x.size() <= kMaxMarkedPoints)
        draw_marker(cr, static_cast<int>(k), lx + 8 + swatch_w / 2, cy, 4.5);
      cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
      // Long names are clipped at the legend box rather than running off the picture.
      cairo_save(cr);
      cairo_rectangle(cr, lx, ly, legend_w, lh);
      cairo_clip(cr);
      draw_text(cr, lx + 16 + swatch_w, cy, plot.series[k].name, 0, 0.5);
      cairo_restore(cr);
    }
  }
}

// ---------------------------------------------------------------------------------------
// Heatmap.

// matplotlib's viridis at t = 0, 0.1, ..., 1.
constexpr Rgb kViridis[] = {
    {0x44 / 255.0, 0x01 / 255.0, 0x54 / 255.0}, {0x48 / 255.0, 0x24 / 255.0, 0x75 / 255.0},
    {0x41 / 255.0, 0x44 / 255.0, 0x87 / 255.0}, {0x35 / 255.0, 0x5f / 255.0, 0x8d / 255.0},
    {0x2a / 255.0, 0x78 / 255.0, 0x8e / 255.0}, {0x21 / 255.0, 0x91 / 255.0, 0x8c / 255.0},
    {0x22 / 255.0, 0xa8 / 255.0, 0x84 / 255.0}, {0x44 / 255.0, 0xbf / 255.0, 0x70 / 255.0},
    {0x7a / 255.0, 0xd1 / 255.0, 0x51 / 255.0}, {0xbd / 255.0, 0xdf / 255.0, 0x26 / 255.0},
    {0xfd / 255.0, 0xe7 / 255.0, 0x25 / 255.0},
};
constexpr int kViridisSize = sizeof(kViridis) / sizeof(kViridis[0]);

struct HeatmapLayout {
  int R = 0, C = 0, n = 0;
  int grid_cols = 1, grid_rows = 1;
  double cell = 20;
  double tick_font = 11;
  int row_every = 1, col_every = 1;  // label every k-th row / column
  bool rotate_cols = false;
  double row_label_w = 0, col_label_h = 0;
  double strip_h = 0;  // the strip under the cells and the gap above it (0: none)
  double block_w = 0, block_h = 0;
  double title_h = 0, panel_title_h = 0;
  double width = 0, height = 0;
};

constexpr double kMargin = 16, kGap = 28, kAxisName = 20, kColorBarW = 16, kColorBarGap = 28;
constexpr double kStripH = 100, kStripGap = 6;

std::string panel_title(const Heatmap& map, size_t i) {
  if (!map.panel_titles.empty()) return map.panel_titles[i];
  return map.panels.size() > 1 ? fmt::format("head {}", i + 1) : std::string();
}

HeatmapLayout layout_heatmap(cairo_t* cr, const Heatmap& map) {
  HeatmapLayout L;
  L.R = static_cast<int>(map.row_labels.size());
  L.C = static_cast<int>(map.col_labels.size());
  L.n = static_cast<int>(map.panels.size());
  L.grid_cols = L.n <= 4 ? L.n : (L.n <= 8 ? 4 : static_cast<int>(std::ceil(std::sqrt(L.n))));
  L.grid_rows = (L.n + L.grid_cols - 1) / L.grid_cols;
  // Square cells: the whole grid of panels fits about 760 x 640 units.
  const double avail_w = 760.0 / L.grid_cols, avail_h = 640.0 / L.grid_rows;
  L.cell = std::floor(std::min(avail_w / L.C, avail_h / L.R));
  L.cell = std::clamp(L.cell, 4.0, 40.0);
  L.tick_font = std::clamp(L.cell * 0.6, 9.0, 13.0);
  set_font(cr, L.tick_font);
  const double fh = font_height(cr);
  double row_w = 0, col_w = 0;
  for (const auto& s : map.row_labels) row_w = std::max(row_w, text_width(cr, s));
  if (!map.strip.empty()) row_w = std::max(row_w, text_width(cr, map.strip_label));
  for (const auto& s : map.col_labels) col_w = std::max(col_w, text_width(cr, s));
  L.row_every = std::max(1, static_cast<int>(std::ceil(fh * 1.05 / L.cell)));
  L.rotate_cols = col_w + 4 > L.cell;
  L.col_every = L.rotate_cols ? std::max(1, static_cast<int>(std::ceil(fh * 1.05 / L.cell))) : 1;
  L.row_label_w = row_w + 6;
  L.col_label_h = (L.rotate_cols ? col_w : fh) + 6;
  set_font(cr, 13, true);
  L.panel_title_h = L.n > 1 || !map.panel_titles.empty() ? font_height(cr) + 6 : 0;
  // Block: [axis name][row labels][cells] wide; [title][cells][col labels][axis name] high.
  L.block_w = kAxisName + L.row_label_w + L.C * L.cell;
  L.strip_h = map.strip.empty() ? 0 : kStripGap + kStripH;
  L.block_h = L.panel_title_h + L.R * L.cell + L.strip_h + L.col_label_h + kAxisName;
  set_font(cr, 16, true);
  L.title_h = map.title.empty() ? 0 : font_height(cr) + 12;
  set_font(cr, L.tick_font);
  const double bar_labels_w = text_width(cr, "0.5") + 8;
  L.width = 2 * kMargin + L.grid_cols * L.block_w + (L.grid_cols - 1) * kGap + kColorBarGap + kColorBarW + bar_labels_w;
  L.height = 2 * kMargin + L.title_h + L.grid_rows * L.block_h + (L.grid_rows - 1) * kGap;
  set_font(cr, 16, true);
  if (!map.title.empty()) L.width = std::max(L.width, text_width(cr, map.title) + 2 * kMargin);
  L.height = std::max(L.height, 2 * kMargin + L.title_h + 120);  // room for the colour bar
  L.width = std::ceil(L.width);
  L.height = std::ceil(L.height);
  return L;
}

// The strip (Heatmap::strip) as a grey image scaled to pw × kStripH units at (x, y), row 0 at
// the bottom; nearest-neighbour, so each input frame stays a sharp column.
void draw_strip(cairo_t* cr, const Heatmap& map, double x, double y, double pw) {
  const int rows = static_cast<int>(map.strip_rows);
  const int cols = static_cast<int>(map.strip.size() / map.strip_rows);
  const auto [lo, hi] = std::minmax_element(map.strip.begin(), map.strip.end());
  const float range = *hi > *lo ? *hi - *lo : 1.0f;
  SurfacePtr image(cairo_image_surface_create(CAIRO_FORMAT_RGB24, cols, rows));
  cairo_surface_flush(image.get());
  unsigned char* pixels = cairo_image_surface_get_data(image.get());
  const int stride = cairo_image_surface_get_stride(image.get());
  for (int c = 0; c < cols; ++c) {
    for (int r = 0; r < rows; ++r) {
      const float v = (map.strip[static_cast<size_t>(c) * rows + r] - *lo) / range;  // [0, 1]
      const uint32_t grey = static_cast<uint32_t>(std::lround(255.0f * v));
      auto* pixel = reinterpret_cast<uint32_t*>(pixels + static_cast<size_t>(rows - 1 - r) * stride) + c;
      *pixel = grey << 16 | grey << 8 | grey;
    }
  }
  cairo_surface_mark_dirty(image.get());
  cairo_save(cr);
  cairo_translate(cr, x, y);
  cairo_scale(cr, pw / cols, kStripH / rows);
  cairo_set_source_surface(cr, image.get(), 0, 0);
  cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
  cairo_rectangle(cr, 0, 0, cols, rows);
  cairo_fill(cr);
  cairo_restore(cr);
  stroke_frame(cr, x, y, pw, kStripH);
}

// The stop marks (Heatmap::marks): a red dot in the stopping cell of each row, and a red tick
// at that column on top of the strip.
void draw_marks(cairo_t* cr, const Heatmap& map, const HeatmapLayout& L, double cx0, double cy0) {
  cairo_set_source_rgb(cr, 0.9, 0.1, 0.1);
  const double ph = L.R * L.cell;
  for (size_t r = 0; r < map.marks.size(); ++r) {
    if (map.marks[r] < 0) continue;
    const double x = cx0 + (static_cast<double>(map.marks[r]) + 0.5) * L.cell;
    cairo_new_sub_path(cr);
    cairo_arc(cr, x, cy0 + (static_cast<double>(r) + 0.5) * L.cell, std::max(1.2, 0.3 * L.cell), 0, 2 * M_PI);
    cairo_fill(cr);
    if (map.strip.empty()) continue;
    cairo_rectangle(cr, x - 0.5, cy0 + ph + kStripGap, 1, 8);
    cairo_fill(cr);
  }
}

void draw_heatmap(cairo_t* cr, const Heatmap& map, const HeatmapLayout& L) {
  const double top = kMargin + L.title_h;
  if (!map.title.empty()) {
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    set_font(cr, 16, true);
    draw_text(cr, L.width / 2, kMargin, map.title, 0.5, 0);
  }
  for (int p = 0; p < L.n; ++p) {
    const int gr = p / L.grid_cols, gc = p % L.grid_cols;
    const double bx = kMargin + gc * (L.block_w + kGap);
    const double by = top + gr * (L.block_h + kGap);
    const double cx0 = std::round(bx + kAxisName + L.row_label_w);  // cells' top-left
    const double cy0 = std::round(by + L.panel_title_h);
    const double pw = L.C * L.cell, ph = L.R * L.cell;

    const std::string pt = panel_title(map, static_cast<size_t>(p));
    if (!pt.empty()) {
      cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
      set_font(cr, 13, true);
      draw_text(cr, cx0 + pw / 2, cy0 - 4, pt, 0.5, 1);
    }

    const std::vector<float>& values = map.panels[p];
    cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE);  // crisp cell edges
    for (int r = 0; r < L.R; ++r) {
      for (int c = 0; c < L.C; ++c) {
        double rgb[3];
        colormap_viridis(values[static_cast<size_t>(r) * L.C + c], rgb);
        cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
        cairo_rectangle(cr, cx0 + c * L.cell, cy0 + r * L.cell, L.cell, L.cell);
        cairo_fill(cr);
      }
    }
    cairo_set_antialias(cr, CAIRO_ANTIALIAS_DEFAULT);
    stroke_frame(cr, cx0, cy0, pw, ph);
    if (!map.strip.empty()) draw_strip(cr, map, cx0, cy0 + ph + kStripGap, pw);
    draw_marks(cr, map, L, cx0, cy0);
    const double labels_y = cy0 + ph + L.strip_h;  // the column labels' top

    // Tick labels: output tokens left of the rows, source tokens under the columns.
    set_font(cr, L.tick_font);
    cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
    for (int r = 0; r < L.R; r += L.row_every) {
      draw_text(cr, cx0 - 4, cy0 + (r + 0.5) * L.cell, map.row_labels[r], 1, 0.5);
    }
    if (!map.strip.empty()) draw_text(cr, cx0 - 4, cy0 + ph + kStripGap + kStripH / 2, map.strip_label, 1, 0.5);
    for (int c = 0; c < L.C; c += L.col_every) {
      const double x = cx0 + (c + 0.5) * L.cell;
      if (L.rotate_cols) {
        draw_text(cr, x, labels_y + 4, map.col_labels[c], 1, 0.5, -M_PI / 2);
      } else {
        draw_text(cr, x, labels_y + 4, map.col_labels[c], 0.5, 0);
      }
    }
    // Axis names.
    set_font(cr, 12);
    cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
    draw_text(cr, cx0 + pw / 2, labels_y + L.col_label_h + 2, "source", 0.5, 0);
    draw_text(cr, bx + 2, cy0 + ph / 2, "output", 0.5, 0, -M_PI / 2);
  }

  // Colour bar: 0 at the bottom, 1 at the top.
  const double bar_x = std::round(kMargin + L.grid_cols * L.block_w + (L.grid_cols - 1) * kGap + kColorBarGap);
  const double bar_y = std::round(top + L.panel_title_h);
  const double bar_h = std::max(100.0, std::min(L.R * L.cell, 300.0));
  cairo_pattern_t* gradient = cairo_pattern_create_linear(0, bar_y + bar_h, 0, bar_y);
  for (int i = 0; i < kViridisSize; ++i) {
    const Rgb c = kViridis[i];
    cairo_pattern_add_color_stop_rgb(gradient, static_cast<double>(i) / (kViridisSize - 1), c.r, c.g, c.b);
  }
  cairo_set_source(cr, gradient);
  cairo_rectangle(cr, bar_x, bar_y, kColorBarW, bar_h);
  cairo_fill(cr);
  cairo_pattern_destroy(gradient);
  stroke_frame(cr, bar_x, bar_y, kColorBarW, bar_h);
  set_font(cr, L.tick_font);
  cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
  const char* labels[] = {"0", "0.5", "1"};
  for (int i = 0; i < 3; ++i) {
    const double y = bar_y + bar_h - i * bar_h / 2;
    cairo_move_to(cr, bar_x + kColorBarW, std::round(y) + 0.5);
    cairo_line_to(cr, bar_x + kColorBarW + 3, std::round(y) + 0.5);
    cairo_stroke(cr);
    draw_text(cr, bar_x + kColorBarW + 5, y, labels[i], 0, 0.5);
  }
}

void validate_heatmap(const Heatmap& map) {
  const size_t R = map.row_labels.size(), C = map.col_labels.size();
  if (R == 0) throw ValueError("write_heatmap: no rows (row_labels is empty)");
  if (C == 0) throw ValueError("write_heatmap: no columns (col_labels is empty)");
  if (map.panels.empty()) throw ValueError("write_heatmap: no panels");
  if (R > kHeatmapMaxCells || C > kHeatmapMaxCells)
    throw ValueError(fmt::format("write_heatmap: {} rows x {} columns: a heatmap draws at most {} of either", R, C,
                                 kHeatmapMaxCells));
  if (!map.panel_titles.empty() && map.panel_titles.size() != map.panels.size()) {
    throw ValueError(fmt::format("write_heatmap: {} panel titles for {} panels (give none or one per panel)",
                                 map.panel_titles.size(), map.panels.size()));
  }
  for (size_t p = 0; p < map.panels.size(); ++p) {
    if (map.panels[p].size() != R * C) {
      throw ValueError(fmt::format("write_heatmap: panel {} has {} values, expected rows*cols = {}*{} = {}", p,
                                   map.panels[p].size(), R, C, R * C));
    }
    for (size_t i = 0; i < map.panels[p].size(); ++i) {
      const float v = map.panels[p][i];
      if (!(v >= -1e-3f && v <= 1.0f + 1e-3f)) {
        throw ValueError(
            fmt::format("write_heatmap: panel {} value {} at row {}, column {} is outside [0, 1]", p, v, i / C, i % C));
      }
    }
  }
  if (!map.strip.empty() || map.strip_rows != 0) {
    const size_t rows = map.strip_rows > 0 ? static_cast<size_t>(map.strip_rows) : 0;
    if (rows == 0 || map.strip.size() % rows != 0 || map.strip.empty() || (map.strip.size() / rows) % C != 0)
      throw ValueError(fmt::format(
          "write_heatmap: the strip has {} values for {} rows; expected strip_rows x (a multiple of cols = {})",
          map.strip.size(), map.strip_rows, C));
    for (size_t i = 0; i < map.strip.size(); ++i)
      if (!std::isfinite(map.strip[i]))
        throw ValueError(fmt::format("write_heatmap: strip value {} at column {}, row {} is not finite", map.strip[i],
                                     i / rows, i % rows));
  }
  if (!map.marks.empty() && map.marks.size() != R)
    throw ValueError(
        fmt::format("write_heatmap: {} marks for {} rows (give none or one per row)", map.marks.size(), R));
  for (size_t r = 0; r < map.marks.size(); ++r)
    if (map.marks[r] < -1 || map.marks[r] >= static_cast<int64_t>(C))
      throw ValueError(fmt::format("write_heatmap: mark {} of row {} is outside [-1, {})", map.marks[r], r, C));
}

}  // namespace

void colormap_viridis(double t, double rgb[3]) {
  if (!(t >= 0)) t = 0;  // NaN too
  if (t > 1) t = 1;
  const double pos = t * (kViridisSize - 1);
  const int i = std::min(static_cast<int>(pos), kViridisSize - 2);
  const double f = pos - i;
  const Rgb a = kViridis[i], b = kViridis[i + 1];
  rgb[0] = a.r + f * (b.r - a.r);
  rgb[1] = a.g + f * (b.g - a.g);
  rgb[2] = a.b + f * (b.b - a.b);
}

void write_line_plot(const LinePlot& plot, const std::string& path) {
  const char* op = "write_line_plot";
  const Format format = format_for(op, path);
  for (size_t k = 0; k < plot.series.size(); ++k) {
    const auto& s = plot.series[k];
    if (s.x.size() != s.y.size()) {
      throw ValueError(
          fmt::format("{}: series {} ('{}') has {} x values but {} y values", op, k, s.name, s.x.size(), s.y.size()));
    }
  }
  if (plot.y_min && plot.y_max && !(*plot.y_min < *plot.y_max)) {
    throw ValueError(fmt::format("{}: y_min {} must be less than y_max {}", op, *plot.y_min, *plot.y_max));
  }
  if ((plot.y_min && !std::isfinite(*plot.y_min)) || (plot.y_max && !std::isfinite(*plot.y_max))) {
    throw ValueError(fmt::format("{}: y_min and y_max must be finite", op));
  }
  for (const Tick& t : plot.x_ticks)
    if (!std::isfinite(t.at))
      throw ValueError(fmt::format("{}: x tick '{}' is not at a finite x", op, one_line(t.label)));
  std::string bytes = render(op, format, kPlotWidth, kPlotHeight, [&](cairo_t* cr) { draw_line_plot(cr, plot); });
  if (format == Format::svg) {
    std::string desc = "line plot";
    if (!plot.x_label.empty() || !plot.y_label.empty()) desc += "; x: " + plot.x_label + "; y: " + plot.y_label;
    desc += "; series:";
    for (size_t k = 0; k < plot.series.size(); ++k) desc += (k == 0 ? " " : ", ") + plot.series[k].name;
    if (!plot.x_ticks.empty()) desc += "; x ticks:";
    for (size_t k = 0; k < plot.x_ticks.size(); ++k) desc += (k == 0 ? " " : ", ") + one_line(plot.x_ticks[k].label);
    add_svg_text(bytes, plot.title, desc);
  }
  write_picture(op, path, bytes);
}

void write_heatmap(const Heatmap& map, const std::string& path) {
  const char* op = "write_heatmap";
  const Format format = format_for(op, path);
  validate_heatmap(map);
  // Measure text on a scratch surface to size the canvas.
  HeatmapLayout layout;
  {
    SurfacePtr scratch(cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1));
    ContextPtr cr(cairo_create(scratch.get()));
    layout = layout_heatmap(cr.get(), map);
  }
  std::string bytes =
      render(op, format, layout.width, layout.height, [&](cairo_t* cr) { draw_heatmap(cr, map, layout); });
  if (format == Format::svg) {
    std::string desc = "heatmap; rows (output):";
    for (const auto& s : map.row_labels) desc += " " + s;
    desc += "; columns (source):";
    for (const auto& s : map.col_labels) desc += " " + s;
    if (map.panels.size() > 1 || !map.panel_titles.empty()) {
      desc += "; panels:";
      for (size_t i = 0; i < map.panels.size(); ++i) desc += (i == 0 ? " " : ", ") + panel_title(map, i);
    }
    if (!map.strip.empty()) desc += "; under the columns: " + map.strip_label;
    if (!map.marks.empty()) desc += "; red dots: where each output step stopped";
    add_svg_text(bytes, map.title, desc);
  }
  write_picture(op, path, bytes);
}

}  // namespace attn::viz
