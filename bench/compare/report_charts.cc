// The compare report's charts (bench/compare/report_charts.h).
#include "bench/compare/report_charts.h"

#include "src/human.h"

namespace ds::bench::report {

using svg::Esc;
using svg::Px;

// Fill of a (storage, cache) combination: the layout's colour, lighter when warm, hatched on
// slowfs. Returns the bar plus its overlay.
std::string ComboBar(double x, double y, double w, double h, const std::string& colour,
                     const Combo& k, const std::string& hatch, const std::string& attrs,
                     const std::string& title) {
  std::string rect =
      fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}", Px(x), Px(y),
                  Px(w), Px(h), colour, k.cache == "warm" ? " fill-opacity=\"0.5\"" : "");
  std::string out = attrs.empty()
                        ? rect + "/>"
                        : fmt::format("{} {}><title>{}</title></rect>", rect, attrs, Esc(title));
  if (k.storage != "local") {
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"url(#{})\"/>",
                       Px(x), Px(y), Px(w), Px(h), hatch);
  }
  return out;
}

constexpr double kLogSpread = 20;

// One group per layout, one horizontal bar per (storage, cache) that has a value.
std::string GroupedBars(const Model& m, const BarSpec& s) {
  const double left = 100, right = 70, top = 6;
  size_t nc = m.combos.size();
  double bar = nc <= 2 ? 18 : 13, gap = 12, group = nc * bar + gap;
  std::string hatch = fmt::format("hatch-{}", s.field);
  std::vector<svg::LegendItem> legend;
  for (const Combo& k : m.combos) {
    legend.push_back({k.Label(), ComboBar(0, 0, 16, 10, "#555", k, hatch, "", "")});
  }
  double y0 = top + svg::LegendHeight(legend.size(), 4) + 10;
  double plot_h = m.layouts.size() * group, height = y0 + plot_h + 40;
  double max = s.min_max, min_pos = INFINITY;
  for (const json& r : Arr(m.c, "runs")) {
    if (double v = Num(r, s.field); !std::isnan(v)) {
      max = std::max(max, v);
      if (v > 0) min_pos = std::min(min_pos, v);
    }
  }
  svg::Scale x{0, 1, left, kWide - right};
  svg::Ticks xt;
  bool log = s.log_when_spread && min_pos < INFINITY && max > kLogSpread * min_pos;
  if (log) {  // whole decades around the values
    int dlo = static_cast<int>(std::floor(std::log10(min_pos)));
    int dhi = std::max(static_cast<int>(std::ceil(std::log10(max))), dlo + 1);
    x = {std::pow(10, dlo), std::pow(10, dhi), left, kWide - right, true};
    for (int d = dlo; d <= dhi; d++) xt.emplace_back(std::pow(10, d), s.tick(std::pow(10, d)));
  } else {
    auto ticks = svg::LinearTicks(max > 0 ? max : 1, 6);
    x.hi = ticks.back();
    for (double t : ticks) xt.emplace_back(t, s.tick(t));
  }
  std::string out = svg::Open(kWide, height, s.name);
  out += svg::Hatch(hatch) + svg::Legend(legend, left, top, 160, 4);
  out += svg::GridX(x, xt, y0, y0 + plot_h);
  out += svg::Text((left + kWide - right) / 2, y0 + plot_h + 33, "middle", "tick",
                   log ? std::string(s.axis) + " (log scale)" : std::string(s.axis));
  for (size_t i = 0; i < m.layouts.size(); i++) {
    const std::string& l = m.layouts[i];
    double gy = y0 + i * group + gap / 2;
    out += svg::Text(left - 8, gy + nc * bar / 2 + 4, "end", "", l);
    for (size_t j = 0; j < nc; j++) {
      const json* r = m.Run(l, m.combos[j]);
      double v = r ? Num(*r, s.field) : kNaN;
      if (std::isnan(v)) continue;
      double w = std::max(x(std::max(v, x.lo)) - left, 0.5);
      std::string title = fmt::format("{} {}: {}", l, m.combos[j].Label(), s.label(v));
      out += ComboBar(left, gy + j * bar, w, bar - 2, m.Colour(l), m.combos[j], hatch,
                      DataAttrs(Key(l, m.combos[j], s.field), v), title);
      out += svg::Text(left + w + 4, gy + j * bar + bar / 2 + 2.5, "start", "tick val", s.label(v));
    }
  }
  out += svg::Line(left, y0, left, y0 + plot_h, "class=\"axis\"");
  if (!std::isnan(s.ref)) {
    out += svg::Line(x(s.ref), y0 - 12, x(s.ref), y0 + plot_h, "class=\"ref\"");
    out += svg::Text(x(s.ref) + 4, y0 - 2, "start", "reft", s.ref_label);
  }
  return out + "</svg>\n";
}

// [latency ns, cumulative fraction] points of a run: its "cdf", else its percentiles.
std::vector<std::pair<double, double>> CdfPoints(const json& run) {
  std::vector<std::pair<double, double>> pts;
  for (const json& p : Arr(run, "cdf")) {
    if (p.is_array() && p.size() == 2 && p[0].is_number() && p[1].is_number() &&
        p[0].get<double>() > 0) {
      pts.emplace_back(p[0].get<double>(), p[1].get<double>());
    }
  }
  if (!pts.empty()) return pts;
  const json lat = run.value("sample_lat_ns", json());
  for (double p : {50.0, 90.0, 99.0, 99.9}) {
    if (double v = Pct(lat, p); v > 0) pts.emplace_back(v, p / 100);
  }
  if (double mx = Num(lat, "max"); mx > 0) pts.emplace_back(mx, 1.0);
  return pts;
}

// The latency range [lo, hi] of every CDF in the report: the panels share one x axis, so that a
// curve's place compares across them.
std::pair<double, double> CdfRange(const Model& m) {
  double lo = INFINITY, hi = 0;
  for (const Combo& k : m.combos) {
    for (const auto& l : m.layouts) {
      const json* r = m.Run(l, k);
      for (const auto& p : r ? CdfPoints(*r) : std::vector<std::pair<double, double>>{}) {
        lo = std::min(lo, p.first), hi = std::max(hi, p.first);
      }
    }
  }
  return {lo, hi};
}

std::string CdfChart(const Model& m, const Combo& k, double lo, double hi) {
  std::vector<svg::Series> lines;
  for (const auto& l : m.layouts) {
    const json* r = m.Run(l, k);
    auto pts = r ? CdfPoints(*r) : std::vector<std::pair<double, double>>{};
    if (pts.empty()) continue;
    double p99 = Pct(r->value("sample_lat_ns", json()), 99);
    lines.push_back({std::isnan(p99) ? l : fmt::format("{}  p99 {}", l, svg::Ns(p99)), m.Colour(l),
                     fmt::format("data-key=\"{}\"", Key(l, k, "cdf")), std::move(pts)});
  }
  if (lines.empty()) return "";
  int dlo = static_cast<int>(std::floor(std::log10(lo)));
  int dhi = std::max(static_cast<int>(std::ceil(std::log10(hi))), dlo + 1);
  svg::LineChartSpec c{
      "latency CDF " + k.Label(), {std::pow(10, dlo), std::pow(10, dhi), 0, 0, true}, {0, 1, 0, 0}};
  for (int d = dlo; d <= dhi; d++) {
    c.xt.emplace_back(std::pow(10, d), svg::Ns(std::pow(10, d)));
    for (int i = 2; d < dhi && i <= 9; i++) c.minor_x.push_back(i * std::pow(10, d));
  }
  c.yt = {{0, "0"}, {0.25, "0.25"}, {0.5, "0.5"}, {0.75, "0.75"}, {1, "1"}};
  c.x_caption = "per-sample read latency (log scale)";
  c.y_caption = "fraction of samples read";
  return svg::LineChart(c, lines);
}

// Samples/s against workers for one (storage, cache), a line per layout; the axes are shared by
// all the sweep charts so that they compare.
std::string SweepChart(const Model& m, const Combo& k) {
  const json& sweep = Arr(m.c, "sweep");
  double req = Num(m.c.value("job", json::object()), "required_samples_per_sec");
  double wlo = INFINITY, whi = 0, max = req > 0 ? req : 0;
  svg::LineChartSpec c;
  std::vector<svg::Series> lines;
  for (const json& e : sweep) {
    std::string l = Str(e, "layout");
    double minw = Num(e, "min_workers");
    svg::Series s{
        minw > 0 ? fmt::format("{} needs {}", l, minw) : l + (req > 0 ? " never meets it" : ""),
        m.Colour(l), fmt::format("data-key=\"{}\"", Key(l, k, "sweep"))};
    for (const json& p : Arr(e, "points")) {
      double w = Num(p, "workers"), v = Num(p, "samples_per_sec");
      if (!(w > 0) || std::isnan(v)) continue;
      wlo = std::min(wlo, w), whi = std::max(whi, w), max = std::max(max, v);
      auto same = [&](const auto& t) { return t.first == w; };
      if (std::none_of(c.xt.begin(), c.xt.end(), same)) c.xt.emplace_back(w, fmt::format("{}", w));
      if (w == minw) s.ring = static_cast<int>(s.pts.size());
      s.pts.emplace_back(w, v);
      s.dots.push_back(fmt::format("{}, {} workers: {}", l, w, PerSec(v)));
    }
    if (k.Of(e) && !s.pts.empty()) lines.push_back(std::move(s));
  }
  if (lines.empty()) return "";
  if (whi <= wlo) wlo /= 2, whi *= 2;
  auto ticks = svg::LinearTicks(max > 0 ? max : 1, 5);
  for (double t : ticks) c.yt.emplace_back(t, svg::Short(t));
  c.name = "worker sweep " + k.Label();
  c.x = {wlo, whi, 0, 0, true}, c.y = {0, ticks.back(), 0, 0};
  c.x_caption = "loader workers (log scale)", c.y_caption = "samples/s";
  c.x_pad = 14, c.ref = req > 0 ? req : -1, c.ref_label = "required " + PerSec(req);
  return svg::LineChart(c, lines);
}

}  // namespace ds::bench::report
