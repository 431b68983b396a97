#include "bench/common/latency_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <vector>

namespace ds::bench {

namespace {
std::span<const double> Or(std::span<const double> ps) {
  return ps.empty() ? std::span<const double>(LatencyHistogram::DefaultPercentiles()) : ps;
}
}  // namespace

nlohmann::json LatencyJson(const LatencyHistogram& h, std::span<const double> percentiles,
                           bool bins) {
  nlohmann::json j = {{"min", h.min()},
                      {"max", h.max()},
                      {"mean", h.mean()},
                      {"stddev", h.stddev()},
                      {"N", h.count()}};
  if (h.count() == 0) return j;
  nlohmann::json pct = nlohmann::json::object();
  for (double p : Or(percentiles)) pct[fmt::format("{:.6f}", p)] = h.Percentile(p);
  j["percentile"] = pct;
  if (bins) {
    nlohmann::json b = nlohmann::json::object();
    for (const auto& [index, count] : h.Export().buckets) {
      b[std::to_string(LatencyHistogram::BucketValue(index))] = count;
    }
    j["bins"] = b;
  }
  return j;
}

std::string LatencyText(const char* label, const LatencyHistogram& h,
                        std::span<const double> percentiles) {
  std::string s =
      fmt::format("    {} (usec): min={:.0f}, max={:.0f}, avg={:.2f}, stdev={:.2f}\n", label,
                  h.min() / 1e3, h.max() / 1e3, h.mean() / 1e3, h.stddev() / 1e3);
  s += fmt::format("    {} percentiles (usec):\n", label);
  const auto ps = Or(percentiles);
  for (size_t i = 0; i < ps.size(); i++) {
    if (i % 4 == 0) s += "     |";
    s += fmt::format(" {:6.2f}th=[{:>6}]", ps[i], (h.Percentile(ps[i]) + 500) / 1000);
    s += (i % 4 == 3 || i + 1 == ps.size()) ? "\n" : ",";
  }
  return s;
}

namespace {

bool NumericKey(const std::string& k, double* v) {
  auto [p, ec] = std::from_chars(k.data(), k.data() + k.size(), *v);
  return ec == std::errc() && p == k.data() + k.size();
}

nlohmann::ordered_json Ordered(const nlohmann::json& j) {
  if (j.is_array()) {
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    for (const auto& x : j) a.push_back(Ordered(x));
    return a;
  }
  if (!j.is_object()) return nlohmann::ordered_json::parse(j.dump());
  std::vector<std::pair<double, std::string>> numeric;
  bool all_numeric = !j.empty();
  for (auto it = j.begin(); it != j.end() && all_numeric; ++it) {
    double v = 0;
    all_numeric = NumericKey(it.key(), &v);
    numeric.emplace_back(v, it.key());
  }
  nlohmann::ordered_json o = nlohmann::ordered_json::object();
  if (all_numeric) {
    std::stable_sort(numeric.begin(), numeric.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [v, k] : numeric) o[k] = Ordered(j.at(k));
  } else {
    for (auto it = j.begin(); it != j.end(); ++it) o[it.key()] = Ordered(it.value());
  }
  return o;
}

}  // namespace

std::string DumpJson(const nlohmann::json& j, int indent) { return Ordered(j).dump(indent); }

nlohmann::json HistogramWire(const LatencyHistogram& h) {
  LatencyHistogram::Parts p = h.Export();
  return {{"n", p.count},   {"min", p.min}, {"max", p.max},
          {"mean", p.mean}, {"m2", p.m2},   {"b", p.buckets}};
}

Status HistogramFromWire(const nlohmann::json& j, LatencyHistogram* h) {
  LatencyHistogram::Parts p;
  p.count = j.at("n").get<uint64_t>();
  p.min = j.at("min").get<uint64_t>();
  p.max = j.at("max").get<uint64_t>();
  p.mean = j.at("mean").get<double>();
  p.m2 = j.at("m2").get<double>();
  p.buckets = j.at("b").get<std::vector<std::pair<uint32_t, uint64_t>>>();
  if (!h->Import(p)) return Status(Code::kCorruption, "a rank's latency histogram");
  return Status::Ok();
}

}  // namespace ds::bench
