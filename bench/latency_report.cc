#include "bench/latency_report.h"

#include <fmt/format.h>

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

}  // namespace ds::bench
