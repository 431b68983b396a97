#include "bench/compare/report_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "bench/replay/replay.h"
#include "bench/compare/svg.h"
#include "src/human.h"

namespace ds::bench {

using nlohmann::json;
using svg::Esc;
using svg::Px;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kWide = 1140;  // full-width charts; the page is at most 1200 px

const char kCss[] = R"(
*{box-sizing:border-box} figure{margin:0} figcaption{font-weight:600;margin:6px 0 2px}
body{margin:0 auto;max-width:1200px;padding:24px 30px 40px;color:#1d2330;background:#fff;
 font:14px/1.45 system-ui,-apple-system,"Segoe UI","DejaVu Sans",sans-serif}
h1{font-size:24px;margin:0 0 2px} h3{font-size:15px;margin:16px 0 4px}
h2{font-size:18px;margin:30px 0 8px;border-bottom:1px solid #d9dee7;padding-bottom:4px}
.src{color:#5b6475;font:13px "DejaVu Sans Mono",monospace;margin:0 0 12px;overflow-wrap:anywhere}
.rec{background:#eef5fc;border-left:5px solid #1f77b4;padding:10px 16px;margin:12px 0 16px;
 font-size:17px;font-weight:600}
.rec ul{margin:6px 0 0;padding-left:20px;font-size:13px;font-weight:400}
.rec small{display:block;font-size:11px;letter-spacing:.06em;color:#5b6475;text-transform:uppercase}
dl.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:4px 24px;margin:0}
dl.facts div{display:flex;gap:10px} dt{color:#5b6475;min-width:80px} dd{margin:0;overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%;margin:4px 0 10px;font-variant-numeric:tabular-nums}
th,td{padding:4px 8px;border-bottom:1px solid #e3e7ee;text-align:right;white-space:nowrap}
th{font-size:12px;color:#5b6475;font-weight:600;background:#f5f7fa}
th:nth-child(2),td:nth-child(2){text-align:left} tr.base td{color:#555;font-style:italic}
td.bar{background:linear-gradient(90deg,#d7e6f6 var(--w),transparent var(--w))}
td.bad{color:#b03a2e;font-weight:600}
.sw{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:6px}
.note{color:#5b6475;margin:0 0 8px;font-size:13px} footer{margin-top:32px;color:#5b6475;font-size:12px}
.grid2{display:grid;grid-template-columns:1fr 1fr;gap:12px 24px}
svg{max-width:100%;height:auto;display:block;font:12px "DejaVu Sans",sans-serif}
svg text{fill:#333} svg .tick{fill:#666;font-size:11px} svg .grid{stroke:#e8ebf0}
svg .axis{stroke:#888} svg .ref{stroke:#c0392b;stroke-width:1.5;stroke-dasharray:6 4}
svg text.reft{fill:#c0392b} svg text.val{paint-order:stroke;stroke:#fff;stroke-width:3px}
)";

double Num(const json& j, const char* key) {
  if (!j.is_object()) return kNaN;
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : kNaN;
}

std::string Str(const json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

const json& Arr(const json& j, const char* key) {
  static const json kEmpty = json::array();
  if (!j.is_object()) return kEmpty;
  auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : kEmpty;
}

// A percentile from fio's block {"percentile": {"99.000000": ns, ...}}.
double Pct(const json& lat, double p) {
  if (!lat.is_object() || !lat.contains("percentile") || !lat["percentile"].is_object()) {
    return kNaN;
  }
  for (const auto& [k, v] : lat["percentile"].items()) {
    if (v.is_number() && std::abs(std::strtod(k.c_str(), nullptr) - p) < 1e-9) {
      return v.get<double>();
    }
  }
  return kNaN;
}

std::string Seconds(double s) {
  return s <= 0 ? "0 s" : s < 1 ? svg::Ns(s * 1e9) : FormatDuration(s);
}
std::string Percent(double f) { return fmt::format("{:.0f}%", f * 100); }
std::string PerSec(double v) { return FormatCount(v) + "/s"; }

struct Combo {
  std::string storage, cache;
  std::string Label() const { return storage + " · " + cache; }
  bool Of(const json& j) const { return Str(j, "storage") == storage && Str(j, "cache") == cache; }
};

// The runs indexed by layout and (storage, cache), in display order.
struct Model {
  const json& c;
  std::vector<std::string> layouts;  // ranking order of the first combo, then first appearance
  std::vector<Combo> combos;         // local before slowfs, cold before warm

  explicit Model(const json& compare) : c(compare) {
    for (const json& r : Arr(c, "runs")) {
      Combo k{Str(r, "storage"), Str(r, "cache")};
      auto same = [&](const Combo& o) { return o.storage == k.storage && o.cache == k.cache; };
      if (std::none_of(combos.begin(), combos.end(), same)) combos.push_back(k);
    }
    auto rank = [](const Combo& k) {
      static const std::string kOrder[] = {"local/cold", "local/warm", "slowfs/cold",
                                           "slowfs/warm"};
      return std::find(std::begin(kOrder), std::end(kOrder), k.storage + "/" + k.cache) - kOrder;
    };
    std::stable_sort(combos.begin(), combos.end(),
                     [&](const Combo& a, const Combo& b) { return rank(a) < rank(b); });
    if (!combos.empty()) {
      for (const json& e : Arr(Ranking(combos[0]), "order")) AddLayout(Str(e, "layout"));
    }
    for (const json& r : Arr(c, "runs")) AddLayout(Str(r, "layout"));
  }
  void AddLayout(const std::string& l) {
    if (std::find(layouts.begin(), layouts.end(), l) == layouts.end()) layouts.push_back(l);
  }
  // The run at the most workers (the one ranked; the others are sweep points).
  const json* Run(const std::string& layout, const Combo& k) const {
    const json* best = nullptr;
    for (const json& r : Arr(c, "runs")) {
      if (Str(r, "layout") == layout && k.Of(r) &&
          (!best || Num(r, "workers") > Num(*best, "workers"))) {
        best = &r;
      }
    }
    return best;
  }
  const json& Ranking(const Combo& k) const {
    static const json kNone = json::object();
    for (const json& e : Arr(c, "ranking")) {
      if (k.Of(e)) return e;
    }
    return kNone;
  }
  std::string Colour(const std::string& layout) const {
    auto it = std::find(layouts.begin(), layouts.end(), layout);
    return svg::LayoutColour(layout, it - layouts.begin());
  }
};

std::string Key(const std::string& layout, const Combo& k, const char* field) {
  return Esc(fmt::format("{}/{}/{}/{}", layout, k.storage, k.cache, field));
}

// Numeric attributes: the key always, the exact value when there is one.
std::string DataAttrs(const std::string& key, double v) {
  if (std::isnan(v)) return fmt::format("data-key=\"{}\"", key);
  return fmt::format("data-key=\"{}\" data-value=\"{}\"", key, svg::Exact(v));
}

// ---------------------------------------------------------------- header and tables

std::string Header(const json& c) {
  std::string src = Str(c, "source");
  std::string out = "<header><h1>dsbench compare</h1>";
  out += fmt::format("<p class=\"src\">{}</p>", Esc(src));
  if (std::string rec = Str(c, "recommendation"); !rec.empty()) {
    // The first line is the pick; any further lines (one per storage and cache) a list.
    size_t nl = std::min(rec.find('\n'), rec.size());
    out += fmt::format("<div class=\"rec\" id=\"recommendation\"><small>Recommendation</small>{}",
                       Esc(rec.substr(0, nl)));
    std::string more;
    for (size_t p = nl; p < rec.size();) {
      size_t e = std::min(rec.find('\n', p + 1), rec.size());
      std::string line = rec.substr(p + 1, e - p - 1);
      line.erase(0, line.find_first_not_of(' '));
      if (!line.empty()) more += "<li>" + Esc(line) + "</li>";
      p = e;
    }
    out += (more.empty() ? "" : "<ul>" + more + "</ul>") + "</div>";
  }
  std::vector<std::pair<std::string, std::string>> facts;
  double samples = Num(c, "samples"), bytes = Num(c, "source_bytes");
  std::string data = std::isnan(samples) ? "" : FormatCount(samples) + " samples";
  if (!std::isnan(bytes))
    data += (data.empty() ? "" : ", ") + FormatBytes(static_cast<uint64_t>(bytes));
  if (!data.empty()) facts.emplace_back("dataset", data);
  if (std::string w = Str(c, "work_dir"); !w.empty()) facts.emplace_back("work dir", w);
  if (const json& job = c.value("job", json::object()); job.is_object() && !job.empty()) {
    std::vector<std::string> workers;
    for (const json& w : Arr(job, "workers")) workers.push_back(w.dump());
    std::string s = Str(job, "mode");
    if (!workers.empty()) s += fmt::format(", {} workers", fmt::join(workers, "/"));
    for (const char* f : {"batch", "prefetch", "epochs"}) {
      if (double v = Num(job, f); !std::isnan(v)) s += fmt::format(", {} {}", f, v);
    }
    double compute = Num(job, "compute_time"), req = Num(job, "required_samples_per_sec");
    if (compute > 0) s += ", compute " + Seconds(compute) + "/batch";
    facts.emplace_back("job", s);
    facts.emplace_back("required", req > 0 ? PerSec(req) : "none given");
  }
  if (const json& fs = c.value("slowfs", json()); fs.is_object()) {
    double meta = Num(fs, "meta_latency_s"), read = Num(fs, "read_latency_s");
    std::string lat = meta > 0 ? "+" + svg::Ns(meta * 1e9) + " per metadata op" : "";
    if (read > 0) lat += (lat.empty() ? "+" : ", +") + svg::Ns(read * 1e9) + " per read";
    facts.emplace_back("slowfs", lat.empty() ? "no added latency" : lat);
  }
  // Where and how it was measured (compare.json's "host"): what a design doc has to quote.
  if (const json& h = c.value("host", json()); h.is_object()) {
    const json& p = h.value("probe", json::object());
    const json& mount = p.value("mount", json::object());
    const json& dev = p.value("block_device", json::object());
    const json& mem = p.value("memory", json::object());
    facts.emplace_back("host", Str(p, "host") + ", Linux " + Str(p, "kernel"));
    facts.emplace_back("file system", Str(p, "fs_type") + " on " + Str(mount, "source") + " at " +
                                          Str(mount, "point") + " (" + Str(mount, "options") + ")");
    if (std::string d = Str(dev, "name"); !d.empty()) {
      facts.emplace_back("device", d + ", scheduler " + Str(dev, "scheduler"));
    }
    double cores = Num(p, "cores"), total = Num(mem, "total");
    std::string machine = std::isnan(cores) ? "" : fmt::format("{} cores", cores);
    if (!std::isnan(total)) machine += ", " + FormatBytes(static_cast<uint64_t>(total)) + " memory";
    facts.emplace_back("machine", machine);
    facts.emplace_back("date", Str(p, "date"));
    facts.emplace_back("dsbench", Str(h, "dsbench_version") + ": " + Str(h, "command"));
  }
  out += "<dl class=\"facts\">";
  for (const auto& [k, v] : facts)
    out += fmt::format("<div><dt>{}</dt><dd>{}</dd></div>", k, Esc(v));
  return out + "</dl></header>\n";
}

std::string Table(const Model& m, const Combo& k) {
  const json& rank = m.Ranking(k);
  std::vector<std::string> order;
  std::map<std::string, std::string> rank_label;  // "1", "=1" (tied with the row above)
  for (const json& e : Arr(rank, "order")) {
    if (m.Run(Str(e, "layout"), k)) {
      order.push_back(Str(e, "layout"));
      rank_label[Str(e, "layout")] = Str(e, "rank");
    }
  }
  std::vector<std::string> rest;
  for (const auto& l : m.layouts) {
    if (m.Run(l, k) && std::find(order.begin(), order.end(), l) == order.end()) rest.push_back(l);
  }
  std::stable_sort(rest.begin(), rest.end(), [&](const std::string& a, const std::string& b) {
    return Num(*m.Run(a, k), "samples_per_sec") > Num(*m.Run(b, k), "samples_per_sec");
  });
  order.insert(order.end(), rest.begin(), rest.end());
  double best = 0;
  for (const auto& l : order) {
    if (const json* r = m.Run(l, k)) best = std::max(best, Num(*r, "samples_per_sec"));
  }
  std::string base = Str(rank, "baseline"), title = k.Label();
  if (double w = order.empty() ? kNaN : Num(*m.Run(order[0], k), "workers"); w > 0) {
    title += fmt::format(", {} workers", w);
  }
  if (!base.empty()) title += " — baseline: " + base;
  std::string out = fmt::format("<h3>{}</h3>", Esc(title));
  out += fmt::format(
      "<table data-storage=\"{}\" data-cache=\"{}\"><tr><th>#</th><th>layout</th>"
      "<th>samples/s</th><th title=\"the ranking score over the measured epochs\">epochs "
      "min–max</th><th>read rate</th><th>opens/s</th><th>p50</th><th>p99</th>"
      "<th>first batch</th><th>AU</th><th>headroom</th><th>× baseline</th><th>size</th>"
      "<th>build</th></tr>",
      Esc(k.storage), Esc(k.cache));
  int n = 0;
  for (const auto& l : order) {
    const json* r = m.Run(l, k);
    if (!r) continue;
    auto cell = [&](const char* field, double v, std::string (*text)(double), bool bad = false) {
      std::string cls = bad ? " class=\"bad\"" : "";
      return fmt::format("<td{} {}>{}</td>", cls, DataAttrs(Key(l, k, field), v),
                         std::isnan(v) ? "—" : Esc(text(v)));
    };
    double sps = Num(*r, "samples_per_sec"), au = Num(*r, "au"), head = Num(*r, "headroom");
    auto ratio = [](double v) { return fmt::format("{:.2f}×", v); };
    out += fmt::format(
        "<tr{}><td>{}</td><td><span class=\"sw\" style=\"background:{}\"></span>{}</td>",
        l == base ? " class=\"base\"" : "",
        rank_label.count(l) && !rank_label[l].empty()
            ? Esc(rank_label[l]) + (rank_label[l][0] == '=' ? " <small>tied</small>" : "")
            : std::to_string(n + 1),
        m.Colour(l), Esc(l));
    n++;
    out += fmt::format("<td class=\"bar\" style=\"--w:{}%\" {}>{}</td>",
                       Px(best > 0 && sps > 0 ? 100 * sps / best : 0),
                       DataAttrs(Key(l, k, "samples_per_sec"), sps),
                       std::isnan(sps) ? "—" : FormatCount(sps));
    double lo = Num(*r, "score_min"), hi = Num(*r, "score_max");
    out += fmt::format("<td {}>{}</td>", DataAttrs(Key(l, k, "score_min"), lo),
                       Num(*r, "epochs_measured") > 1 && !std::isnan(lo)
                           ? FormatCount(lo) + "–" + FormatCount(hi)
                           : std::string("1 epoch"));
    out += cell("bytes_per_sec", Num(*r, "bytes_per_sec"), FormatRate);
    out += cell("opens_per_sec", Num(*r, "opens_per_sec"), FormatCount);
    out += cell("p50_ns", Pct(r->value("sample_lat_ns", json()), 50), svg::Ns);
    out += cell("p99_ns", Pct(r->value("sample_lat_ns", json()), 99), svg::Ns);
    out += cell("first_batch_seconds", Num(*r, "first_batch_seconds"), Seconds);
    out += cell(
        "au", au, [](double v) { return fmt::format("{:.1f}%", v * 100); }, au < kAuBar);
    out += cell("headroom", head, ratio, head < 1);
    out += cell("vs_baseline", Num(*r, "vs_baseline"), ratio);
    out += cell("dataset_bytes", Num(*r, "dataset_bytes"),
                [](double v) { return FormatBytes(static_cast<uint64_t>(v)); });
    out += cell("build_seconds", Num(*r, "build_seconds"), Seconds);
    out += "</tr>";
  }
  return out + "</table>\n";
}

// ---------------------------------------------------------------- charts

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

struct BarSpec {
  const char* field;  // the run's field, also the data-key suffix
  const char* name;
  const char* axis;  // the x axis caption
  std::string (*tick)(double);
  std::string (*label)(double);  // values at the end of bars
  double min_max = 0;            // the axis reaches at least this
  double ref = kNaN;             // a dashed reference line
  const char* ref_label = "";
  // A log axis when the values span more than kLogSpread (cold 1.4k/s beside warm 190k/s: on a
  // linear axis the cold bars are slivers).
  bool log_when_spread = false;
};
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

}  // namespace

std::string CompareHtml(const json& compare) {
  static const json kNone = json::object();
  const json& c = compare.is_object() ? compare : kNone;
  Model m(c);
  std::string src = Str(c, "source");
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>{}</title><style>{}</style></head><body>\n",
      Esc(src.empty() ? "dsbench compare" : "dsbench compare: " + src), kCss);
  out += Header(c);
  if (m.layouts.empty()) return out + "<p>No runs.</p></body></html>\n";
  out +=
      "<section id=\"throughput\"><h2>Throughput</h2><p class=\"note\">Samples per second "
      "the replayed job got from each layout (higher is better); lighter bars: warm page "
      "cache, hatched: through slowfs. The axis is logarithmic when the fastest run is over "
      "20x the slowest, so that cold runs stay readable beside warm ones.</p>";
  BarSpec throughput{"samples_per_sec", "samples per second", "samples/s", svg::Short, PerSec};
  throughput.log_when_spread = true;
  out += GroupedBars(m, throughput);
  out += "</section>\n<section id=\"ranking\"><h2>Ranking</h2>";
  for (const Combo& k : m.combos) out += Table(m, k);
  out += "</section>\n";
  std::string cdfs;
  auto [cdf_lo, cdf_hi] = CdfRange(m);
  for (const Combo& k : m.combos) {
    if (std::string chart = CdfChart(m, k, cdf_lo, cdf_hi); !chart.empty()) {
      cdfs += fmt::format("<figure><figcaption>{}</figcaption>{}</figure>", Esc(k.Label()), chart);
    }
  }
  if (!cdfs.empty()) {
    out +=
        "<section id=\"latency\"><h2>Per-sample read latency</h2><p class=\"note\">"
        "The fraction of samples read within a given time: further left is faster, a long "
        "tail to the right stalls batches.</p><div class=\"grid2\">" +
        cdfs + "</div></section>\n";
  }
  const json& runs = Arr(c, "runs");
  if (std::any_of(runs.begin(), runs.end(),
                  [](const json& r) { return !std::isnan(Num(r, "au")); })) {
    out +=
        "<section id=\"au\"><h2>Accelerator utilisation</h2><p class=\"note\">Compute time over "
        "wall time, first step excluded; MLPerf Storage requires 90%.</p>";
    out += GroupedBars(m, {"au", "accelerator utilisation", "accelerator utilisation", Percent,
                           Percent, 1, kAuBar, "MLPerf 90%"});
    out += "</section>\n";
  }
  std::string sweeps;
  for (const Combo& k : m.combos) {
    if (std::string chart = SweepChart(m, k); !chart.empty()) {
      sweeps +=
          fmt::format("<figure><figcaption>{}</figcaption>{}</figure>", Esc(k.Label()), chart);
    }
  }
  if (!sweeps.empty()) {
    out +=
        "<section id=\"sweep\"><h2>Worker sweep</h2><p class=\"note\">Samples per second as "
        "loader workers grow; the ringed point is the fewest workers that meet the "
        "requirement.</p><div class=\"grid2\">" +
        sweeps + "</div></section>\n";
  }
  return out + "<footer>dsbench compare · dspack " DSPACK_VERSION "</footer></body></html>\n";
}

}  // namespace ds::bench
