#include "bench/latency_report.h"

#include <fmt/format.h>

namespace ds::bench {

nlohmann::json LatencyJson(const LatencyHistogram& h) {
  nlohmann::json pct = nlohmann::json::object();
  for (double p : LatencyHistogram::DefaultPercentiles()) {
    pct[fmt::format("{:.6f}", p)] = h.Percentile(p);
  }
  return {{"min", h.min()},       {"max", h.max()}, {"mean", h.mean()},
          {"stddev", h.stddev()}, {"N", h.count()}, {"percentile", pct}};
}

std::string LatencyText(const char* label, const LatencyHistogram& h) {
  std::string s =
      fmt::format("    {} (usec): min={:.0f}, max={:.0f}, avg={:.2f}, stdev={:.2f}\n", label,
                  h.min() / 1e3, h.max() / 1e3, h.mean() / 1e3, h.stddev() / 1e3);
  s += fmt::format("    {} percentiles (usec):\n", label);
  const auto& ps = LatencyHistogram::DefaultPercentiles();
  for (size_t i = 0; i < ps.size(); i++) {
    if (i % 4 == 0) s += "     |";
    s += fmt::format(" {:6.2f}th=[{:>6}]", ps[i], (h.Percentile(ps[i]) + 500) / 1000);
    s += (i % 4 == 3 || i + 1 == ps.size()) ? "\n" : ",";
  }
  return s;
}

}  // namespace ds::bench
