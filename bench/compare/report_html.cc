#include "bench/compare/report_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "bench/compare/report_charts.h"
#include "bench/compare/report_model.h"
#include "bench/compare/svg.h"
#include "bench/replay/replay.h"
#include "src/human.h"

namespace ds::bench {

using nlohmann::json;
using svg::Esc;
using svg::Px;

namespace {

using namespace report;

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
    if (double v = Num(job, "batch_reads"); v > 0) s += fmt::format(", batch reads {}", v);
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
  if (std::string nfs = Str(c, "nfs_url"); !nfs.empty()) facts.emplace_back("nfs", nfs);
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

// What each layout cost the NFS server per sample, from its "rpc_bill" (src/rpc_bill.h), the
// most frequent op first. Empty when no layout was read over NFS.
std::string RpcBills(const Model& m, const Combo& k, const std::vector<std::string>& order) {
  std::string items;
  for (const auto& l : order) {
    const json* r = m.Run(l, k);
    const json* bill =
        r && r->contains("rpc_bill") && (*r)["rpc_bill"].is_object() ? &(*r)["rpc_bill"] : nullptr;
    if (!bill) continue;
    std::vector<std::pair<double, std::string>> per_op;
    static const json kNoOps = json::object();
    const json& all = bill->contains("ops") ? (*bill)["ops"] : kNoOps;
    for (const auto& [name, op] : all.items()) {
      if (double per = Num(op, "per_sample"); !std::isnan(per)) per_op.emplace_back(per, name);
    }
    std::stable_sort(per_op.begin(), per_op.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    std::string ops;
    for (const auto& [per, name] : per_op) {
      ops += fmt::format("{}{:.{}f} {}", ops.empty() ? "" : " + ", per, per < 1 ? 3 : 2, name);
    }
    items += fmt::format("<li><b>{}</b>: {} ({} RPCs per sample, {})</li>", Esc(l),
                         Esc(ops.empty() ? "no RPCs" : ops),
                         Esc(fmt::format("{:.3f}", Num(*bill, "per_sample"))),
                         Esc(Str(*bill, "source")));
  }
  if (items.empty()) return "";
  return "<p class=\"note\">What each layout cost the NFS server, per sample (the RPC bill):</p>"
         "<ul class=\"rpc\">" +
         items + "</ul>\n";
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
  return out + "</table>\n" + RpcBills(m, k, order);
}

}  // namespace

std::string CompareHtml(const json& compare) {
  using namespace report;
  static const json kNone = json::object();
  const json& c = compare.is_object() ? compare : kNone;
  Model m(c);
  std::string src = Str(c, "source");
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>{}</title><style>{}</style></head><body>\n",
      Esc(src.empty() ? "dsbench compare" : "dsbench compare: " + src), report::Css());
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
