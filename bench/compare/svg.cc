#include "bench/compare/svg.h"

#include <fmt/format.h>

#include <cmath>

namespace ds::bench::svg {

std::string Esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
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
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string Px(double v) {
  std::string s = fmt::format("{:.1f}", v);
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s == "-0" ? "0" : s;
}

std::string Exact(double v) { return fmt::format("{}", v); }

std::string Ns(double ns) {
  if (ns < 1e3) return fmt::format("{:.3g} ns", ns);
  if (ns < 1e6) return fmt::format("{:.3g} µs", ns / 1e3);
  if (ns < 1e9) return fmt::format("{:.3g} ms", ns / 1e6);
  return fmt::format("{:.3g} s", ns / 1e9);
}

std::string Short(double v) {
  if (v >= 1e6) return fmt::format("{:g}M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:g}k", v / 1e3);
  return fmt::format("{:g}", v);
}

std::vector<double> LinearTicks(double max, int target) {
  double raw = max / std::max(target, 1);
  double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (int i = 0;; i++) {
    ticks.push_back(i * step);
    if (i * step >= max * (1 - 1e-9)) break;
  }
  return ticks;
}

double Scale::operator()(double v) const {
  double f = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo))
                 : (v - lo) / (hi - lo);
  return p0 + f * (p1 - p0);
}

std::string GridX(const Scale& x, const Ticks& ticks, double y0, double y1) {
  std::string out;
  for (const auto& [v, label] : ticks) {
    out +=
        Line(x(v), y0, x(v), y1, "class=\"grid\"") + Text(x(v), y1 + 16, "middle", "tick", label);
  }
  return out;
}

std::string GridY(const Scale& y, const Ticks& ticks, double x0, double x1) {
  std::string out;
  for (const auto& [v, label] : ticks) {
    out +=
        Line(x0, y(v), x1, y(v), "class=\"grid\"") + Text(x0 - 6, y(v) + 4, "end", "tick", label);
  }
  return out;
}

std::string Polyline(const std::vector<std::pair<double, double>>& px, std::string_view stroke,
                     std::string_view attrs, std::string_view title) {
  std::string pts;
  for (const auto& [x, y] : px) pts += fmt::format("{},{} ", Px(x), Px(y));
  if (!pts.empty()) pts.pop_back();
  std::string head =
      fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"{}{}",
                  stroke, pts, attrs.empty() ? "" : " ", attrs);
  return title.empty() ? head + "/>"
                       : fmt::format("{}><title>{}</title></polyline>", head, Esc(title));
}

std::string Hatch(std::string_view id) {
  return fmt::format(
      "<defs><pattern id=\"{}\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\" "
      "patternTransform=\"rotate(45)\"><rect width=\"2.5\" height=\"6\" fill=\"#fff\" "
      "fill-opacity=\"0.7\"/></pattern></defs>",
      Esc(id));
}

std::string LineChart(LineChartSpec c, const std::vector<Series>& series) {
  const double width = 560, left = 46, right = 26, top = 22, plot_h = 220, bottom = top + plot_h;
  c.x.p0 = left + c.x_pad, c.x.p1 = width - right - c.x_pad;
  c.y.p0 = bottom, c.y.p1 = top;
  std::vector<LegendItem> legend;
  std::string lines;
  for (const Series& s : series) {
    legend.push_back(
        {s.label, fmt::format("<rect y=\"3\" width=\"16\" height=\"4\" fill=\"{}\"/>", s.colour)});
    std::vector<std::pair<double, double>> px;
    for (const auto& [x, y] : s.pts) px.emplace_back(c.x(x), c.y(y));
    lines += Polyline(px, s.colour, s.attrs, s.label);
    for (size_t i = 0; i < s.dots.size() && i < px.size(); i++) {
      bool ring = static_cast<int>(i) == s.ring;
      lines += fmt::format(
          "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\" stroke=\"{}\" stroke-width=\"2\">"
          "<title>{}</title></circle>",
          Px(px[i].first), Px(px[i].second), ring ? 5.5 : 3, ring ? "#fff" : s.colour, s.colour,
          Esc(s.dots[i]));
    }
  }
  double legend_y = bottom + 40;
  std::string out = Open(width, legend_y + LegendHeight(legend.size(), 3), c.name);
  out += GridY(c.y, c.yt, left, width - right) + GridX(c.x, c.xt, top, bottom);
  for (double v : c.minor_x) out += Line(c.x(v), bottom, c.x(v), bottom + 4, "class=\"axis\"");
  out += Text((left + width - right) / 2, bottom + 30, "middle", "tick", c.x_caption);
  if (!c.y_caption.empty()) out += Text(4, 12, "start", "tick", c.y_caption);
  out += Line(left, bottom, width - right, bottom, "class=\"axis\"");
  if (c.ref >= 0) {
    out += Line(left, c.y(c.ref), width - right, c.y(c.ref), "class=\"ref\"");
    out += Text(width - right, c.y(c.ref) - 5, "end", "reft", c.ref_label);
  }
  return out + lines + Legend(legend, left, legend_y, 170, 3) + "</svg>";
}

std::string LayoutColour(std::string_view layout, size_t index) {
  static const std::pair<std::string_view, std::string_view> kFixed[] = {
      {"dir", "#7f7f7f"}, {"zip", "#bcbd22"}, {"native", "#1f77b4"},   {"lmdb", "#2ca02c"},
      {"wds", "#ff7f0e"}, {"tar", "#ff7f0e"}, {"tfrecord", "#9467bd"}, {"recordio", "#d62728"},
  };
  static const char* kSpare[] = {"#17becf", "#8c564b", "#e377c2", "#393b79", "#637939"};
  for (const auto& [name, colour] : kFixed) {
    if (layout == name) return std::string(colour);
  }
  return kSpare[index % std::size(kSpare)];
}

std::string Legend(const std::vector<LegendItem>& items, double x, double y, double col_width,
                   int per_row) {
  std::string out = "<g class=\"legend\">";
  for (size_t i = 0; i < items.size(); i++) {
    double ix = x + static_cast<double>(i % per_row) * col_width;
    double iy = y + static_cast<double>(i / per_row) * 18;
    out += fmt::format("<g transform=\"translate({},{})\">{}", Px(ix), Px(iy), items[i].swatch);
    out += Text(22, 9.5, "start", "", items[i].label) + "</g>";
  }
  return out + "</g>";
}

double LegendHeight(size_t n, int per_row) {
  return n == 0 ? 0 : static_cast<double>((n + per_row - 1) / per_row) * 18;
}

std::string Text(double x, double y, std::string_view anchor, std::string_view cls,
                 std::string_view text) {
  std::string c = cls.empty() ? "" : fmt::format(" class=\"{}\"", cls);
  std::string a = anchor == "start" ? "" : fmt::format(" text-anchor=\"{}\"", anchor);
  return fmt::format("<text x=\"{}\" y=\"{}\"{}{}>{}</text>", Px(x), Px(y), a, c, Esc(text));
}

std::string Line(double x1, double y1, double x2, double y2, std::string_view extra) {
  return fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" {}/>", Px(x1), Px(y1), Px(x2),
                     Px(y2), extra);
}

std::string Open(double width, double height, std::string_view label) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"{2}\">",
      Px(width), Px(height), Esc(label));
}

}  // namespace ds::bench::svg
