// Small building blocks for static inline SVG charts in self-contained HTML reports: escaping,
// number formatting, tick choice, axis scales, legends and a fixed colour per dataset layout.
// Pure functions; no state, thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ds::bench::svg {

// Escapes &, <, >, " and ' so any text can go into element content or a quoted attribute.
std::string Esc(std::string_view s);

// A coordinate: at most one decimal, no trailing ".0" ("12", "12.5").
std::string Px(double v);

// The exact value for a data-value attribute: the shortest text that reads back as `v`.
std::string Exact(double v);

// A latency in nanoseconds with three significant digits: "850 ns", "120 µs", "1.25 ms", "2 s".
std::string Ns(double ns);

// A round axis number, short: "0", "500", "2.5k", "10k", "1.5M".
std::string Short(double v);

// Round tick values 0, step, 2*step, ... covering [0, max] with about `target` ticks (a 1/2/5
// step); the last tick is >= max. REQUIRES: max > 0.
std::vector<double> LinearTicks(double max, int target);

// A linear or logarithmic map from data [lo, hi] onto pixels [p0, p1].
// REQUIRES: lo < hi; for log, lo > 0.
struct Scale {
  double lo, hi, p0, p1;
  bool log = false;
  double operator()(double v) const;
};

// Axis ticks: a value and its label.
using Ticks = std::vector<std::pair<double, std::string>>;
// Vertical grid lines at x(tick) from y0 down to y1, labelled below y1.
std::string GridX(const Scale& x, const Ticks& ticks, double y0, double y1);
// Horizontal grid lines at y(tick) from x0 to x1, labelled left of x0.
std::string GridY(const Scale& y, const Ticks& ticks, double x0, double x1);

// A 2 px polyline through pixel points; `attrs` are extra attributes (may be empty); a non-empty
// `title` becomes hover text (escaped).
std::string Polyline(const std::vector<std::pair<double, double>>& px, std::string_view stroke,
                     std::string_view attrs, std::string_view title);

// <defs> with a pattern of white diagonal stripes, for fill="url(#id)" over a coloured shape.
std::string Hatch(std::string_view id);

// The colour of a layout: fixed for the known layouts (dir, zip, native, lmdb, wds/tar,
// tfrecord, recordio); others get one from a spare palette, by `index`.
std::string LayoutColour(std::string_view layout, size_t index);

// One legend entry: `swatch` is SVG drawn in a 16x10 box with its top-left corner at (0, 0).
struct LegendItem {
  std::string label;
  std::string swatch;
};
// Legend entries in rows of `per_row` columns `col_width` px wide, from (x, y) (top-left).
std::string Legend(const std::vector<LegendItem>& items, double x, double y, double col_width,
                   int per_row);
// Pixels a Legend of `n` items in rows of `per_row` takes vertically.
double LegendHeight(size_t n, int per_row);

// A line chart 560 px wide (two fit side by side in the page): axes, grid, captions, an optional
// dashed horizontal reference line, one polyline per series (hover text: its label), and the
// legend below in three columns.
struct Series {
  std::string label{}, colour{};
  std::string attrs{};                           // extra polyline attributes (e.g. data-key)
  std::vector<std::pair<double, double>> pts{};  // data coordinates
  std::vector<std::string> dots{};               // a dot per point with this hover text, or none
  int ring = -1;                                 // the point drawn as a ring, if any
};
struct LineChartSpec {
  std::string name{};  // accessible name
  Scale x{}, y{};      // the data ranges (lo, hi, log); LineChart sets the pixels
  Ticks xt{}, yt{};
  std::vector<double> minor_x{};  // short unlabelled ticks
  std::string x_caption{}, y_caption{};
  double x_pad = 0;  // pixels kept free at both ends of the x axis
  double ref = -1;   // a dashed line at this y (none when < 0), labelled ref_label
  std::string ref_label{};
};
std::string LineChart(LineChartSpec spec, const std::vector<Series>& series);

// <text> with class `cls` (may be empty) and anchor start | middle | end; `text` is escaped.
std::string Text(double x, double y, std::string_view anchor, std::string_view cls,
                 std::string_view text);
// A line; `extra` is appended as attributes (e.g. class="grid").
std::string Line(double x1, double y1, double x2, double y2, std::string_view extra);

// Opens an <svg> with this size, viewBox and an accessible name (escaped).
std::string Open(double width, double height, std::string_view label);

}  // namespace ds::bench::svg
