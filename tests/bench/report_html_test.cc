#include "bench/compare/report_html.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

using nlohmann::json;

namespace {

const char kSource[] = "/data/a&b <x> \"q\"/src";

// A run with a log-normal-ish latency CDF around `median_ns`.
json HtmlRun(const std::string& layout, const std::string& storage, const std::string& cache,
             double sps, json au, json headroom, json vs_baseline, double median_ns) {
  json cdf = json::array();
  for (int k = -8; k <= 8; k++) {
    double x = median_ns * std::pow(2, k / 2.0);
    cdf.push_back({x, 1 / (1 + std::pow(median_ns / x, 3))});
  }
  cdf.push_back({median_ns * 40, 1.0});
  json pct = {{"50.000000", median_ns},
              {"90.000000", median_ns * 2},
              {"99.000000", median_ns * 5},
              {"99.900000", median_ns * 12}};
  return {
      {"layout", layout},
      {"storage", storage},
      {"cache", cache},
      {"workers", 4},
      {"dataset_bytes", 331000000},
      {"build_seconds", 0.41},
      {"samples_per_sec", sps},
      {"bytes_per_sec", sps * 110000.5},
      {"opens_per_sec", layout == "dir" ? sps : 0.0},
      {"au", au},
      {"headroom", headroom},
      {"first_batch_seconds", 0.0123},
      {"vs_baseline", vs_baseline},
      {"sample_lat_ns", {{"mean", median_ns * 1.3}, {"max", median_ns * 40}, {"percentile", pct}}},
      {"cdf", cdf},
      {"data_wait_ns", {{"mean", 1e5}, {"max", 2e6}, {"percentile", pct}}}};
}

// 3 layouts x local/slowfs x cold/warm, with AU, headroom and a sweep.
json Fixture() {
  json runs = json::array(), ranking = json::array();
  const std::vector<std::pair<std::string, double>> layouts = {
      {"dir", 812.25}, {"zip", 530.125}, {"native", 2400.5}};
  double combo_scale[] = {1.0, 3.1, 0.21, 1.9};
  int c = 0;
  for (std::string storage : {"local", "slowfs"}) {
    for (std::string cache : {"cold", "warm"}) {
      double scale = combo_scale[c++];
      json order = json::array();
      for (const auto& [layout, base] : layouts) {
        double sps = base * scale * (storage == "slowfs" && layout == "native" ? 2.5 : 1);
        double au = std::min(0.99, sps / 2000);
        json vs = layout == "zip" && storage == "slowfs" ? json() : json(sps / (812.25 * scale));
        runs.push_back(HtmlRun(layout, storage, cache, sps, au, sps / 1500, vs,
                               (storage == "slowfs" ? 2e6 : 1.5e5) * 1e3 / base));
        order.push_back({{"layout", layout}, {"samples_per_sec", sps}, {"vs_baseline", vs}});
      }
      std::sort(order.begin(), order.end(), [](const json& a, const json& b) {
        return a["samples_per_sec"].get<double>() > b["samples_per_sec"].get<double>();
      });
      ranking.push_back(
          {{"storage", storage}, {"cache", cache}, {"baseline", "dir"}, {"order", order}});
    }
  }
  // A worker sweep on local cold storage: runs at 1 and 2 workers besides the ranked 4.
  json sweep = json::array();
  for (const auto& [layout, base] : {layouts[2], layouts[0]}) {
    json points = json::array();
    for (int w : {1, 2}) {
      json r = HtmlRun(layout, "local", "cold", base * w * 0.375, nullptr, nullptr, nullptr, 1e5);
      r["workers"] = w;
      runs.push_back(r);
      points.push_back({{"workers", w}, {"samples_per_sec", r["samples_per_sec"]}});
    }
    points.push_back({{"workers", 4}, {"samples_per_sec", base}});
    sweep.push_back({{"layout", layout},
                     {"storage", "local"},
                     {"cache", "cold"},
                     {"min_workers", layout == "native" ? json(2) : json()},
                     {"points", points}});
  }
  return {{"source", kSource},
          {"work_dir", "/tmp/work"},
          {"samples", 3000},
          {"source_bytes", 330000000},
          {"job",
           {{"mode", "map"},
            {"workers", {1, 2, 4}},
            {"batch", 32},
            {"prefetch", 2},
            {"epochs", 2},
            {"compute_time", 0.02},
            {"required_samples_per_sec", 1500}}},
          {"slowfs", {{"meta_latency_s", 0.001}, {"read_latency_s", 0.0}}},
          {"runs", runs},
          {"ranking", ranking},
          {"sweep", sweep},
          {"recommendation", "native: 2.96x the directory tree cold; zip: 0.65x"}};
}

size_t Count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) n++;
  return n;
}

// Every data-key in the page with its data-value ("" when absent) and the tag carrying it.
struct Attr {
  std::string tag, value;
};
std::multimap<std::string, Attr> DataAttrs(const std::string& html) {
  std::multimap<std::string, Attr> out;
  const std::string k = "data-key=\"", v = " data-value=\"";
  for (size_t p = html.find(k); p != std::string::npos; p = html.find(k, p + 1)) {
    size_t open = html.rfind('<', p);
    std::string tag = html.substr(open + 1, html.find_first_of(" >", open) - open - 1);
    size_t end = html.find('"', p + k.size());
    std::string key = html.substr(p + k.size(), end - p - k.size());
    std::string value;
    if (html.compare(end + 1, v.size(), v) == 0) {
      size_t vend = html.find('"', end + 1 + v.size());
      value = html.substr(end + 1 + v.size(), vend - end - 1 - v.size());
    }
    out.insert({key, {tag, value}});
  }
  return out;
}

std::string KeyOf(const json& r, const std::string& field) {
  return r["layout"].get<std::string>() + "/" + r["storage"].get<std::string>() + "/" +
         r["cache"].get<std::string>() + "/" + field;
}

void WriteIfAsked(const std::string& html, const json& compare) {
  const char* out = std::getenv("DSPACK_REPORT_OUT");
  if (!out || !*out) return;
  std::string path = out, json_path = path;
  if (json_path.size() > 5 && json_path.ends_with(".html")) json_path.resize(json_path.size() - 5);
  std::ofstream(path) << html;
  std::ofstream(json_path + ".json") << json{{"compare", compare}}.dump(1) << "\n";
}

}  // namespace

TEST_CASE("CompareHtml: a chart per view, and every number keyed to the JSON", "[bench]") {
  json c = Fixture();
  std::string html = ds::bench::CompareHtml(c);
  WriteIfAsked(html, c);
  // throughput + 4 CDFs (one per storage x cache) + AU + sweep
  CHECK(Count(html, "<svg") == 7);
  CHECK(html.find("<section id=\"au\">") != std::string::npos);
  CHECK(html.find("<section id=\"sweep\">") != std::string::npos);
  CHECK(html.find("native: 2.96x the directory tree cold; zip: 0.65x") != std::string::npos);
  auto attrs = DataAttrs(html);
  REQUIRE(c["runs"].size() == 16);
  int ranked = 0;
  for (const json& r : c["runs"]) {
    if (r["workers"] != 4) {  // sweep points: not in the tables and bar charts
      CHECK(std::stod(attrs.find(KeyOf(r, "samples_per_sec"))->second.value) !=
            r["samples_per_sec"].get<double>());
      continue;
    }
    ranked++;
    for (const char* field : {"samples_per_sec", "bytes_per_sec", "opens_per_sec", "au", "headroom",
                              "vs_baseline", "build_seconds"}) {
      std::string key = KeyOf(r, field);
      INFO(key);
      auto [lo, hi] = attrs.equal_range(key);
      REQUIRE(lo != hi);
      for (auto it = lo; it != hi; ++it) {
        if (r[field].is_null()) {
          CHECK(it->second.value.empty());
        } else {
          REQUIRE_FALSE(it->second.value.empty());
          CHECK(std::stod(it->second.value) == Approx(r[field].get<double>()).epsilon(1e-12));
        }
      }
    }
    // one bar in the throughput chart and one table cell per run
    auto [lo, hi] = attrs.equal_range(KeyOf(r, "samples_per_sec"));
    int rects = 0, cells = 0;
    for (auto it = lo; it != hi; ++it) (it->second.tag == "rect" ? rects : cells)++;
    CHECK(rects == 1);
    CHECK(cells == 1);
    CHECK(attrs.count(KeyOf(r, "cdf")) == 1);
    auto p99 = attrs.find(KeyOf(r, "p99_ns"));
    REQUIRE(p99 != attrs.end());
    CHECK(std::stod(p99->second.value) ==
          r["sample_lat_ns"]["percentile"]["99.000000"].get<double>());
  }
  CHECK(ranked == 12);
  CHECK(html.find("local · cold, 4 workers — baseline: dir") != std::string::npos);
  CHECK(attrs.count("native/local/cold/sweep") == 1);
  CHECK(attrs.count("dir/local/cold/sweep") == 1);
}

namespace {
// The texts of class "tick" (axis labels and captions) in each <svg> after `from`, up to `to`.
std::vector<std::vector<std::string>> TickTexts(const std::string& html, const std::string& from,
                                                const std::string& to) {
  std::vector<std::vector<std::string>> out;
  size_t end = html.find(to, html.find(from));
  for (size_t p = html.find("<svg", html.find(from)); p < end; p = html.find("<svg", p + 1)) {
    size_t close = html.find("</svg>", p);
    out.emplace_back();
    for (size_t t = html.find("class=\"tick\"", p); t < close;
         t = html.find("class=\"tick\"", t + 1)) {
      size_t gt = html.find('>', t), lt = html.find("</text>", gt);
      out.back().push_back(html.substr(gt + 1, lt - gt - 1));
    }
  }
  return out;
}
}  // namespace

TEST_CASE("CompareHtml: cold beside warm on a log axis; the CDF panels share one", "[bench]") {
  json c = Fixture();  // 111 to 11,402 samples/s: over kLogSpread apart
  std::string html = ds::bench::CompareHtml(c);
  auto throughput = TickTexts(html, "<section id=\"throughput\">", "</section>");
  REQUIRE(throughput.size() == 1);
  CHECK(std::count(throughput[0].begin(), throughput[0].end(), "samples/s (log scale)") == 1);
  CHECK(std::count(throughput[0].begin(), throughput[0].end(), "100") == 1);  // decades
  CHECK(std::count(throughput[0].begin(), throughput[0].end(), "100k") == 1);
  auto cdfs = TickTexts(html, "<section id=\"latency\">", "</section>");
  REQUIRE(cdfs.size() == 4);
  for (const auto& ticks : cdfs) {
    CHECK(ticks == cdfs[0]);  // one x range (and the same y axis) in every panel
    CHECK(std::count(ticks.begin(), ticks.end(), "fraction of samples read") == 1);
  }
  // Values within kLogSpread of each other: a linear axis from 0.
  for (json& r : c["runs"]) r["samples_per_sec"] = 1000 + r["samples_per_sec"].get<double>() / 100;
  html = ds::bench::CompareHtml(c);
  throughput = TickTexts(html, "<section id=\"throughput\">", "</section>");
  REQUIRE(throughput.size() == 1);
  CHECK(std::count(throughput[0].begin(), throughput[0].end(), "samples/s") == 1);
  CHECK(std::count(throughput[0].begin(), throughput[0].end(), "0") == 1);
}

TEST_CASE("CompareHtml escapes text from the JSON and links nothing outside", "[bench]") {
  json c = Fixture();
  c["runs"][0]["layout"] = "d<i>r";
  c["recommendation"] = "use <native> & \"enjoy\"";
  std::string html = ds::bench::CompareHtml(c);
  CHECK(html.find("/data/a&amp;b &lt;x&gt; &quot;q&quot;/src") != std::string::npos);
  CHECK(html.find("a&b") == std::string::npos);
  CHECK(html.find("<x>") == std::string::npos);
  CHECK(html.find("use &lt;native&gt; &amp; &quot;enjoy&quot;") != std::string::npos);
  CHECK(html.find("<i>") == std::string::npos);
  CHECK(html.find("d&lt;i&gt;r/local/cold/samples_per_sec") != std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  const std::string ns = "xmlns=\"http://www.w3.org/2000/svg\"";
  std::string rest = html;
  for (size_t p; (p = rest.find(ns)) != std::string::npos;) rest.erase(p, ns.size());
  CHECK(rest.find("http") == std::string::npos);
  // url() only refers to patterns in the page
  for (size_t p = rest.find("url("); p != std::string::npos; p = rest.find("url(", p + 1)) {
    CHECK(rest[p + 4] == '#');
  }
}

TEST_CASE("CompareHtml leaves out the AU chart when no run has AU", "[bench]") {
  json c = Fixture();
  for (json& r : c["runs"]) r["au"] = nullptr;
  std::string html = ds::bench::CompareHtml(c);
  CHECK(html.find("<section id=\"au\">") == std::string::npos);
  CHECK(Count(html, "<svg") == 6);
  auto attrs = DataAttrs(html);
  for (const json& r : c["runs"]) {
    if (r["workers"] != 4) continue;
    auto [lo, hi] = attrs.equal_range(KeyOf(r, "au"));
    REQUIRE(std::distance(lo, hi) == 1);  // the table cell, with no value
    CHECK(lo->second.tag == "td");
    CHECK(lo->second.value.empty());
  }
}

TEST_CASE("CompareHtml copes with missing optional fields", "[bench]") {
  CHECK(ds::bench::CompareHtml(json::object()).find("No runs") != std::string::npos);
  CHECK_NOTHROW(ds::bench::CompareHtml(json()));
  json c = {
      {"runs",
       {{{"layout", "dir"}, {"storage", "local"}, {"cache", "cold"}, {"samples_per_sec", 10}}}},
      {"slowfs", nullptr},
      {"sweep", json::array()}};
  std::string html = ds::bench::CompareHtml(c);
  CHECK(Count(html, "<svg") == 1);  // no latency, AU or sweep data
  auto attrs = DataAttrs(html);
  auto bar = attrs.find("dir/local/cold/samples_per_sec");
  REQUIRE(bar != attrs.end());
  CHECK(bar->second.value == "10");
  CHECK(html.find("<section id=\"sweep\">") == std::string::npos);
}
