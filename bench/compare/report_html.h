// The HTML report of `dsbench compare`: one self-contained page (inline CSS and static inline
// SVG, no scripts, no external URLs) rendered from the compare JSON object (the value of the
// top-level "compare" key, as written by bench/compare/compare.cc).
//
// Contents: a header (source, samples, bytes, the job, slowfs latencies, the recommendation), a
// ranked table per (storage, cache), a grouped bar chart of samples/s, one per-sample latency
// CDF per (storage, cache), accelerator utilisation bars with MLPerf's 90% bar (when any run has
// "au"), and the worker sweep (when "sweep" is non-empty).
//
// Where a (layout, storage, cache) has runs at several worker counts, the tables and charts show
// the one with the most workers (the one compare ranks); the others appear in the sweep.
//
// Machine-checkable: every numeric table cell and every bar carries
//   data-key="<layout>/<storage>/<cache>/<field>"  data-value="<the exact JSON number>"
// with field one of samples_per_sec, bytes_per_sec, opens_per_sec, p50_ns, p99_ns, au, headroom,
// vs_baseline, dataset_bytes, build_seconds (a null value has the key and no data-value); each
// CDF polyline carries data-key=".../cdf" and each sweep polyline ".../sweep".
// Missing optional fields are shown as "—". A pure function; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ds::bench {

std::string CompareHtml(const nlohmann::json& compare);

}  // namespace ds::bench
