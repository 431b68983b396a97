// The compare report's charts, drawn as inline SVG beside svg.h's building blocks: grouped
// bars per layout (throughput, AU), latency CDFs per (storage, cache) on one shared x range, and
// the worker sweep. Internal to report_html.cc. Pure.
#pragma once

#include <string>
#include <utility>

#include "bench/compare/report_model.h"

namespace ds::bench::report {

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
// One group per layout, one horizontal bar per (storage, cache) that has a value.
std::string GroupedBars(const Model& m, const BarSpec& s);
// The latency range [lo, hi] of every CDF in the report: the panels share one x axis.
std::pair<double, double> CdfRange(const Model& m);
// The per-sample latency CDF of each layout for one (storage, cache); "" when none has one.
std::string CdfChart(const Model& m, const Combo& k, double lo, double hi);
// Samples/s against workers for one (storage, cache), a line per layout; "" without a sweep.
std::string SweepChart(const Model& m, const Combo& k);

}  // namespace ds::bench::report
