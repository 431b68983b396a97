// fio's latency report, shared by `dsbench io` (clat) and `dsbench meta` (lat): the JSON block
// {"min","max","mean","stddev","N","percentile":{"1.000000":ns,...}} in nanoseconds, and the
// human lines "<label> (usec): min=.., max=.., avg=.., stdev=.." plus fio's percentile table,
// both over LatencyHistogram::DefaultPercentiles(). Pure functions of the histogram.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "src/histogram.h"

namespace ds::bench {

nlohmann::json LatencyJson(const LatencyHistogram& h);
// Lines indented by four spaces, each ending in '\n'.
std::string LatencyText(const char* label, const LatencyHistogram& h);

}  // namespace ds::bench
