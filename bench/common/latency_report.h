// fio's latency report, shared by `dsbench io` (clat) and `dsbench meta` (lat): the JSON block
// {"min","max","mean","stddev","N","percentile":{"1.000000":ns,...}} in nanoseconds, and the
// human lines "<label> (usec): min=.., max=.., avg=.., stdev=.." plus fio's percentile table,
// both over LatencyHistogram::DefaultPercentiles(). Pure functions of the histogram.
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "src/histogram.h"
#include "src/status.h"

namespace ds::bench {

// `percentiles`: the list to report (empty: fio's default). As fio: "percentile" only when the
// histogram holds something, and with `bins` (fio's json+) the non-empty buckets as
// {"<bucket value ns>": count}.
nlohmann::json LatencyJson(const LatencyHistogram& h, std::span<const double> percentiles = {},
                           bool bins = false);
// j as text (indent as json::dump), with the keys of every object whose keys are all numbers
// (percentiles "99.900000", json+ bins "<ns>") in numeric order, as fio writes them; other
// objects keep their keys' order. Every JSON document dsbench prints goes through it.
std::string DumpJson(const nlohmann::json& j, int indent = 2);
// Lines indented by four spaces, each ending in '\n'.
std::string LatencyText(const char* label, const LatencyHistogram& h,
                        std::span<const double> percentiles = {});

// The one codec of a latency histogram between ranks: JSON for the wire ({"n","min","max",
// "mean","m2","b":[[index,count]]}), and back (kCorruption when inconsistent). Lossless.
nlohmann::json HistogramWire(const LatencyHistogram& h);
Status HistogramFromWire(const nlohmann::json& j, LatencyHistogram* h);

}  // namespace ds::bench
