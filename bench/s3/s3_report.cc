// `dsbench s3`'s figures and reports (bench/s3/s3_bench.h).
#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>

#include "bench/common/latency_report.h"
#include "bench/s3/s3_bench.h"
#include "src/human.h"

namespace ds::bench {
namespace {

const std::vector<double> kPercentiles = {50, 90, 99, 99.9};

// Ticks of `ticks` added up into segments of k ticks; only the `whole` first segments.
std::vector<S3Segment> Segments(const std::vector<uint64_t>& ops,
                                const std::vector<uint64_t>& bytes, size_t k, size_t whole,
                                double segment) {
  std::vector<S3Segment> out;
  for (size_t s = 0; s < whole; s++) {
    uint64_t o = 0, b = 0;
    for (size_t t = s * k; t < (s + 1) * k && t < ops.size(); t++) {
      o += ops[t];
      b += bytes[t];
    }
    out.push_back({static_cast<double>(o) / segment, static_cast<double>(b) / segment});
  }
  std::sort(out.begin(), out.end(),
            [](const S3Segment& a, const S3Segment& b) { return a.ops_per_s > b.ops_per_s; });
  return out;
}

size_t TicksPer(double segment) { return static_cast<size_t>(std::lround(segment / kS3Tick)); }

nlohmann::json OpJson(const S3OpStats& s, double seconds) {
  nlohmann::json j = {{"ops", s.ops},
                      {"bytes", s.bytes},
                      {"errors", s.errors},
                      {"ops_per_s", seconds > 0 ? s.ops / seconds : 0.0},
                      {"bw_bytes", seconds > 0 ? s.bytes / seconds : 0.0}};
  j["ttfb_ns"] = LatencyJson(s.ttfb, kPercentiles);
  j["ttlb_ns"] = LatencyJson(s.ttlb, kPercentiles);
  return j;
}

nlohmann::json SegmentJson(const S3Segment& s) {
  return {{"ops_per_s", s.ops_per_s}, {"bw_bytes", s.bytes_per_s}};
}

std::string Ms(uint64_t ns) { return fmt::format("{:.2f}", static_cast<double>(ns) / 1e6); }

std::string PercentileLine(const char* label, const LatencyHistogram& h) {
  return fmt::format("    {} (ms): p50={} p90={} p99={} p99.9={} max={}\n", label,
                     Ms(h.Percentile(50)), Ms(h.Percentile(90)), Ms(h.Percentile(99)),
                     Ms(h.Percentile(99.9)), Ms(h.max()));
}

}  // namespace

std::vector<S3Segment> S3Segments(const S3BenchResult& r, double segment) {
  const size_t whole = static_cast<size_t>(std::floor(r.seconds() / segment + 1e-9));
  return Segments(r.tick_ops, r.tick_bytes, TicksPer(segment), whole, segment);
}

S3BenchSummary SummarizeS3(const S3BenchOptions& o, const std::vector<S3BenchResult>& ranks) {
  S3BenchSummary s;
  if (ranks.empty()) return s;
  int64_t start = LLONG_MAX, end = 0, first_end = LLONG_MAX;
  for (const S3BenchResult& r : ranks) {
    start = std::min(start, r.start_ns);
    end = std::max(end, r.end_ns);
    first_end = std::min(first_end, r.end_ns);
  }
  s.seconds = static_cast<double>(end - start) / 1e9;
  s.first_seconds = static_cast<double>(first_end - start) / 1e9;
  std::vector<uint64_t> ops, bytes;
  uint64_t first_ops = 0, first_bytes = 0;
  for (const S3BenchResult& r : ranks) {
    for (int i = 0; i < kS3Ops; i++) {
      s.op[i].ops += r.op[i].ops;
      s.op[i].bytes += r.op[i].bytes;
      s.op[i].errors += r.op[i].errors;
      s.op[i].ttfb.Merge(r.op[i].ttfb);
      s.op[i].ttlb.Merge(r.op[i].ttlb);
    }
    const size_t shift = static_cast<size_t>((r.start_ns - start) / 1e9 / kS3Tick);
    // Whole ticks of this rank before the first rank finished (all of the first one's work).
    const double cut = static_cast<double>(first_end - r.start_ns) / 1e9 / kS3Tick;
    const size_t cut_ticks = r.end_ns == first_end ? SIZE_MAX : static_cast<size_t>(cut);
    if (ops.size() < shift + r.tick_ops.size()) {
      ops.resize(shift + r.tick_ops.size());
      bytes.resize(shift + r.tick_ops.size());
    }
    for (size_t t = 0; t < r.tick_ops.size(); t++) {
      ops[shift + t] += r.tick_ops[t];
      bytes[shift + t] += r.tick_bytes[t];
      if (t < cut_ticks) {
        first_ops += r.tick_ops[t];
        first_bytes += r.tick_bytes[t];
      }
    }
  }
  for (int i = 0; i < kS3Ops; i++) {
    const S3OpStats& op = s.op[i];
    s.ops += op.ops;
    s.bytes += op.bytes;
    s.errors += op.errors;
    // curl times a put's TTFB to the start of its upload, not to the answer: not judged.
    if (op.ttfb.count() > 0 && static_cast<S3Op>(i) != S3Op::kPut) {
      s.max_ttfb_p99 = std::max(s.max_ttfb_p99, static_cast<double>(op.ttfb.Percentile(99)) / 1e9);
    }
  }
  if (s.seconds > 0) {
    s.ops_per_s = s.ops / s.seconds;
    s.bytes_per_s = s.bytes / s.seconds;
  }
  if (s.first_seconds > 0) {
    s.first_ops_per_s = first_ops / s.first_seconds;
    s.first_bytes_per_s = first_bytes / s.first_seconds;
  }
  const size_t whole = static_cast<size_t>(std::floor(s.seconds / o.segment + 1e-9));
  s.segments = Segments(ops, bytes, TicksPer(o.segment), whole, o.segment);
  s.judged = o.min_bw > 0 || o.min_iops > 0 || o.max_ttfb_p99 > 0;
  s.bw_pass = s.bytes_per_s >= static_cast<double>(o.min_bw);
  s.iops_pass = s.ops_per_s >= o.min_iops;
  s.ttfb_pass = o.max_ttfb_p99 <= 0 || s.max_ttfb_p99 <= o.max_ttfb_p99;
  return s;
}

std::string EncodeS3Result(const S3BenchResult& r) {
  nlohmann::json ops = nlohmann::json::array();
  for (const S3OpStats& s : r.op) {
    ops.push_back({{"ops", s.ops},
                   {"bytes", s.bytes},
                   {"errors", s.errors},
                   {"ttfb", HistogramWire(s.ttfb)},
                   {"ttlb", HistogramWire(s.ttlb)}});
  }
  nlohmann::json j = {{"rank", r.rank},
                      {"host", r.host},
                      {"prefix", r.prefix},
                      {"op", ops},
                      {"tick_ops", r.tick_ops},
                      {"tick_bytes", r.tick_bytes},
                      {"start_ns", r.start_ns},
                      {"end_ns", r.end_ns},
                      {"prepare_seconds", r.prepare_seconds},
                      {"prepared", r.prepared},
                      {"retries", r.retries},
                      {"cpu_user", r.cpu_user},
                      {"cpu_sys", r.cpu_sys},
                      {"first_error", r.first_error},
                      {"interrupted", r.interrupted},
                      {"cleanup_note", r.cleanup_note}};
  return j.dump();
}

Result<S3BenchResult> DecodeS3Result(const std::string& text) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    S3BenchResult r;
    r.rank = j.at("rank").get<int>();
    r.host = j.at("host").get<std::string>();
    r.prefix = j.at("prefix").get<std::string>();
    const auto& ops = j.at("op");
    if (!ops.is_array() || ops.size() != kS3Ops) throw std::runtime_error("op: 5 entries");
    for (int i = 0; i < kS3Ops; i++) {
      r.op[i].ops = ops[i].at("ops").get<uint64_t>();
      r.op[i].bytes = ops[i].at("bytes").get<uint64_t>();
      r.op[i].errors = ops[i].at("errors").get<uint64_t>();
      DS_RETURN_IF_ERROR(HistogramFromWire(ops[i].at("ttfb"), &r.op[i].ttfb));
      DS_RETURN_IF_ERROR(HistogramFromWire(ops[i].at("ttlb"), &r.op[i].ttlb));
    }
    r.tick_ops = j.at("tick_ops").get<std::vector<uint64_t>>();
    r.tick_bytes = j.at("tick_bytes").get<std::vector<uint64_t>>();
    if (r.tick_ops.size() != r.tick_bytes.size()) throw std::runtime_error("ticks differ");
    r.start_ns = j.at("start_ns").get<int64_t>();
    r.end_ns = j.at("end_ns").get<int64_t>();
    r.prepare_seconds = j.at("prepare_seconds").get<double>();
    r.prepared = j.at("prepared").get<uint64_t>();
    r.retries = j.at("retries").get<uint64_t>();
    r.cpu_user = j.at("cpu_user").get<double>();
    r.cpu_sys = j.at("cpu_sys").get<double>();
    r.first_error = j.at("first_error").get<std::string>();
    r.interrupted = j.at("interrupted").get<bool>();
    r.cleanup_note = j.at("cleanup_note").get<std::string>();
    return r;
  } catch (const std::exception& e) {
    return Status(Code::kCorruption, fmt::format("a rank's s3 result: {}", e.what()));
  }
}

nlohmann::json S3BenchJson(const S3BenchOptions& o, const std::vector<S3BenchResult>& ranks,
                           const S3BenchSummary& s) {
  nlohmann::json options = {{"url", o.url},
                            {"op", o.op},
                            {"concurrency", o.concurrency},
                            {"obj_size", o.obj_size},
                            {"obj_size_min", o.obj_size_min},
                            {"objects", o.objects},
                            {"range", o.range},
                            {"duration", o.duration},
                            {"ops", o.ops},
                            {"segment", o.segment},
                            {"existing", o.existing},
                            {"ranks", ranks.size()}};
  nlohmann::json ops = nlohmann::json::object();
  for (int i = 0; i < kS3Ops; i++) {
    if (s.op[i].ops + s.op[i].errors > 0)
      ops[S3OpName(static_cast<S3Op>(i))] = OpJson(s.op[i], s.seconds);
  }
  nlohmann::json segments = {{"segment_seconds", o.segment}, {"count", s.segments.size()}};
  if (!s.segments.empty()) {
    segments["fastest"] = SegmentJson(s.segments.front());
    segments["median"] = SegmentJson(s.segments[s.segments.size() / 2]);
    segments["slowest"] = SegmentJson(s.segments.back());
  }
  nlohmann::json jr = nlohmann::json::array();
  for (const S3BenchResult& r : ranks) {
    uint64_t n = 0, b = 0, e = 0;
    for (const S3OpStats& x : r.op) {
      n += x.ops;
      b += x.bytes;
      e += x.errors;
    }
    const double sec = r.seconds();
    jr.push_back(
        {{"rank", r.rank},
         {"host", r.host},
         {"prefix", r.prefix},
         {"seconds", sec},
         {"ops", n},
         {"bytes", b},
         {"errors", e},
         {"ops_per_s", sec > 0 ? n / sec : 0.0},
         {"bw_bytes", sec > 0 ? b / sec : 0.0},
         {"prepared", r.prepared},
         {"prepare_seconds", r.prepare_seconds},
         {"retries", r.retries},
         {"cpu",
          {{"usr_s", r.cpu_user},
           {"sys_s", r.cpu_sys},
           {"per_request_us", n + e > 0 ? (r.cpu_user + r.cpu_sys) * 1e6 / (n + e) : 0.0}}},
         {"first_error", r.first_error},
         {"interrupted", r.interrupted}});
  }
  nlohmann::json summary = {
      {"ops", s.ops},
      {"bytes", s.bytes},
      {"errors", s.errors},
      {"seconds", s.seconds},
      {"ops_per_s", s.ops_per_s},
      {"bw_bytes", s.bytes_per_s},
      {"segments", segments},
      {"first_done",
       {{"seconds", s.first_seconds},
        {"ops_per_s", s.first_ops_per_s},
        {"bw_bytes", s.first_bytes_per_s}}},
      {"last_done",
       {{"seconds", s.seconds}, {"ops_per_s", s.ops_per_s}, {"bw_bytes", s.bytes_per_s}}}};
  nlohmann::json verdict = {{"judged", s.judged},
                            {"min_bw_bytes", o.min_bw},
                            {"bw_pass", s.bw_pass},
                            {"min_iops", o.min_iops},
                            {"iops_pass", s.iops_pass},
                            {"max_ttfb_p99_s", o.max_ttfb_p99},
                            {"ttfb_p99_s", s.max_ttfb_p99},
                            {"ttfb_pass", s.ttfb_pass},
                            {"pass", s.pass()}};
  return {{"s3", options}, {"ops", ops}, {"summary", summary}, {"ranks", jr}, {"verdict", verdict}};
}

std::string S3BenchText(const S3BenchOptions& o, const std::vector<S3BenchResult>& ranks,
                        const S3BenchSummary& s) {
  std::string size = o.obj_size_min > 0 ? fmt::format("{} to {}", FormatBytes(o.obj_size_min),
                                                      FormatBytes(o.obj_size))
                                        : FormatBytes(o.obj_size);
  std::string out = fmt::format(
      "dsbench s3: {} of {} objects{} at {}, concurrency {}, {}{}\n", o.op, size,
      o.range > 0 ? fmt::format(" in {} ranges", FormatBytes(o.range)) : "", o.url, o.concurrency,
      o.ops > 0 ? fmt::format("{} ops", o.ops) : FormatDuration(o.duration),
      ranks.size() > 1 ? fmt::format(" on each of {} ranks", ranks.size()) : "");
  if (!ranks.empty() && ranks[0].prepared > 0) {
    out += fmt::format("prepared {} objects in {}\n", ranks[0].prepared,
                       FormatDuration(ranks[0].prepare_seconds));
  }
  for (int i = 0; i < kS3Ops; i++) {
    const S3OpStats& x = s.op[i];
    if (x.ops + x.errors == 0) continue;
    out += fmt::format("  {}: {} ops, {} ops/s, {}, {} errors\n", S3OpName(static_cast<S3Op>(i)),
                       x.ops, FormatCount(s.seconds > 0 ? x.ops / s.seconds : 0),
                       FormatRate(s.seconds > 0 ? x.bytes / s.seconds : 0), x.errors);
    if (x.ttfb.count() > 0) {
      out += PercentileLine("ttfb", x.ttfb);
      out += PercentileLine("ttlb", x.ttlb);
    }
  }
  out += fmt::format("all: {} ops in {}: {} ops/s, {}\n", s.ops, FormatDuration(s.seconds),
                     FormatCount(s.ops_per_s), FormatRate(s.bytes_per_s));
  if (!s.segments.empty()) {
    auto seg = [](const S3Segment& x) {
      return fmt::format("{} ops/s {}", FormatCount(x.ops_per_s), FormatRate(x.bytes_per_s));
    };
    out += fmt::format("segments of {} ({}): fastest {}, median {}, slowest {}\n",
                       FormatDuration(o.segment), s.segments.size(), seg(s.segments.front()),
                       seg(s.segments[s.segments.size() / 2]), seg(s.segments.back()));
  }
  if (ranks.size() > 1) {
    out += fmt::format("first done: {} ops/s {} at {}; last done: {} ops/s {} at {}\n",
                       FormatCount(s.first_ops_per_s), FormatRate(s.first_bytes_per_s),
                       FormatDuration(s.first_seconds), FormatCount(s.ops_per_s),
                       FormatRate(s.bytes_per_s), FormatDuration(s.seconds));
  }
  double cpu = 0;
  for (const S3BenchResult& r : ranks) cpu += r.cpu_user + r.cpu_sys;
  if (s.ops + s.errors > 0) {
    out += fmt::format("cpu: {:.2f} s for {} requests, {:.0f} us per request\n", cpu,
                       s.ops + s.errors, cpu * 1e6 / static_cast<double>(s.ops + s.errors));
  }
  for (const S3BenchResult& r : ranks) {
    if (!r.first_error.empty()) {
      out += fmt::format("rank {}: first error: {}\n", r.rank, r.first_error);
    }
  }
  if (s.judged) {
    if (o.min_bw > 0) {
      out += fmt::format("{}: {} (bar {})\n", s.bw_pass ? "PASS" : "FAIL",
                         FormatRate(s.bytes_per_s), FormatRate(static_cast<double>(o.min_bw)));
    }
    if (o.min_iops > 0) {
      out += fmt::format("{}: {} ops/s (bar {})\n", s.iops_pass ? "PASS" : "FAIL",
                         FormatCount(s.ops_per_s), FormatCount(o.min_iops));
    }
    if (o.max_ttfb_p99 > 0) {
      out += fmt::format("{}: TTFB p99 {} (bar {})\n", s.ttfb_pass ? "PASS" : "FAIL",
                         FormatDuration(s.max_ttfb_p99), FormatDuration(o.max_ttfb_p99));
    }
  }
  return out;
}

}  // namespace ds::bench
