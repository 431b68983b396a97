#include "bench/io/ranks.h"

#include <fmt/format.h>

#include <algorithm>

#include "bench/common/rank_wire.h"
#include "src/human.h"

namespace ds::bench {

template <>
struct Wire<DirStats> {
  static constexpr auto fields =
      std::make_tuple(WireField{"bytes", &DirStats::io_bytes}, WireField{"ios", &DirStats::ios},
                      WireField{"clat", &DirStats::clat});
};
template <>
struct Wire<JobResult> {
  static constexpr auto fields = std::make_tuple(
      WireField{"name", &JobResult::name}, WireField{"jobs", &JobResult::jobs},
      WireField{"runtime_ms", &JobResult::runtime_ms}, WireField{"start_ns", &JobResult::start_ns},
      WireField{"end_ns", &JobResult::end_ns}, WireField{"usr", &JobResult::usr_cpu},
      WireField{"sys", &JobResult::sys_cpu}, WireField{"read", &JobResult::read},
      WireField{"write", &JobResult::write}, WireField{"trim", &JobResult::trim});
};
template <>
struct Wire<RankIo> {
  static constexpr auto fields =
      std::make_tuple(WireField{"rank", &RankIo::rank}, WireField{"host", &RankIo::host},
                      WireField{"result", &RankIo::result});
};

namespace {

double Bandwidth(const JobResult& r) {
  double secs = r.runtime_ms / 1e3;
  return secs > 0 ? static_cast<double>(r.read.io_bytes + r.write.io_bytes + r.trim.io_bytes) / secs
                  : 0;
}

}  // namespace

std::string WithRank(std::string path, int rank) {
  for (size_t p = path.find("%r"); p != std::string::npos; p = path.find("%r", p)) {
    std::string r = std::to_string(rank);
    path.replace(p, 2, r);
    p += r.size();
  }
  return path;
}

std::string EncodeRankIo(const RankIo& r) { return EncodeWire(r); }

Result<RankIo> DecodeRankIo(std::string_view text) { return DecodeWire<RankIo>(text, "io"); }

ClusterIo AggregateRanks(std::vector<RankIo> ranks, bool stonewalled) {
  ClusterIo c;
  c.ranks = std::move(ranks);
  c.stonewalled = stonewalled;
  std::vector<JobResult> results;
  for (const auto& r : c.ranks) results.push_back(r.result);
  c.aggregate = MergeJobResults(c.ranks.front().result.name, results);
  // IOR's aggregate: all bytes over the job's window, first start to last end.
  c.window_ms = static_cast<double>(c.aggregate.end_ns - c.aggregate.start_ns) / 1e6;
  c.aggregate.runtime_ms = c.window_ms;
  std::vector<double> bws;
  for (size_t i = 0; i < c.ranks.size(); i++) {
    bws.push_back(Bandwidth(c.ranks[i].result));
    if (bws[i] < bws[c.slowest]) c.slowest = i;
  }
  std::sort(bws.begin(), bws.end());
  c.median_bw = bws[bws.size() / 2];
  return c;
}

nlohmann::json ClusterJson(const IoJobOptions& o, const ClusterIo& c) {
  nlohmann::json clients = nlohmann::json::array();
  for (const auto& r : c.ranks) {
    nlohmann::json j = JobJson(o, r.result);
    j["hostname"] = r.host;
    j["rank"] = r.rank;
    // When this rank's measured IO began and ended, ms after the common start barrier.
    j["window_ms"] = {{"start", static_cast<double>(r.result.start_ns) / 1e6},
                      {"end", static_cast<double>(r.result.end_ns) / 1e6}};
    clients.push_back(std::move(j));
  }
  const RankIo& slow = c.ranks[c.slowest];
  nlohmann::json agg = JobJson(o, c.aggregate);
  agg["jobname"] = "All clients";  // fio's name for the sum over clients
  agg["ranks"] = c.ranks.size();
  agg["window_ms"] = c.window_ms;
  agg["stonewall"] = c.stonewalled;
  agg["slowest_rank"] = {{"rank", slow.rank},
                         {"hostname", slow.host},
                         {"bw_bytes", static_cast<uint64_t>(Bandwidth(slow.result))},
                         {"median_bw_bytes", static_cast<uint64_t>(c.median_bw)}};
  return {{"fio version", std::string("dsbench-") + DSPACK_VERSION},
          {"client_stats", clients},
          {"aggregate", agg}};
}

std::string ClusterText(const IoJobOptions& o, const ClusterIo& c) {
  std::string s = fmt::format("{} ranks{}:\n", c.ranks.size(),
                              c.stonewalled ? ", stonewalled (all stopped with the first)" : "");
  for (const auto& r : c.ranks) {
    const JobResult& j = r.result;
    double bw = Bandwidth(j);
    double secs = j.runtime_ms / 1e3;
    uint64_t ios = j.read.ios + j.write.ios + j.trim.ios;
    s += fmt::format("  rank {:>3} {:<16} BW={}/s IOPS={} ({} in {:.0f} ms)\n", r.rank, r.host,
                     FormatBytes(static_cast<uint64_t>(bw)),
                     FormatCount(secs > 0 ? static_cast<double>(ios) / secs : 0),
                     FormatBytes(j.read.io_bytes + j.write.io_bytes + j.trim.io_bytes),
                     j.runtime_ms);
  }
  s += "aggregate over the window (first start to last end, as IOR):\n";
  s += JobText(o, c.aggregate);
  const RankIo& slow = c.ranks[c.slowest];
  double bw = Bandwidth(slow.result);
  s += fmt::format("slowest rank: {} ({}) at {}/s, {:.0f} % below the median rank\n", slow.rank,
                   slow.host, FormatBytes(static_cast<uint64_t>(bw)),
                   c.median_bw > 0 ? (1 - bw / c.median_bw) * 100 : 0.0);
  return s;
}

namespace {

struct RepFigures {
  std::vector<double> bw, iops;
};

RepFigures Figures(const std::vector<ClusterIo>& reps) {
  RepFigures f;
  for (const auto& c : reps) {
    const JobResult& a = c.aggregate;
    double secs = c.window_ms / 1e3;
    f.bw.push_back(
        secs > 0 ? static_cast<double>(a.read.io_bytes + a.write.io_bytes + a.trim.io_bytes) / secs
                 : 0);
    f.iops.push_back(secs > 0 ? static_cast<double>(a.read.ios + a.write.ios + a.trim.ios) / secs
                              : 0);
  }
  return f;
}

nlohmann::json MinMaxMean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return {{"min", *std::min_element(v.begin(), v.end())},
          {"max", *std::max_element(v.begin(), v.end())},
          {"mean", sum / static_cast<double>(v.size())}};
}

}  // namespace

nlohmann::json RepetitionsJson(const std::vector<ClusterIo>& reps) {
  RepFigures f = Figures(reps);
  nlohmann::json runs = nlohmann::json::array();
  for (size_t i = 0; i < reps.size(); i++) {
    runs.push_back({{"bw_bytes", f.bw[i]}, {"iops", f.iops[i]}, {"window_ms", reps[i].window_ms}});
  }
  return {{"runs", runs}, {"bw_bytes", MinMaxMean(f.bw)}, {"iops", MinMaxMean(f.iops)}};
}

std::string RepetitionsText(const std::vector<ClusterIo>& reps) {
  nlohmann::json j = RepetitionsJson(reps);
  auto rate = [](const nlohmann::json& m) {
    return fmt::format("min {}/s  max {}/s  mean {}/s",
                       FormatBytes(static_cast<uint64_t>(m["min"].get<double>())),
                       FormatBytes(static_cast<uint64_t>(m["max"].get<double>())),
                       FormatBytes(static_cast<uint64_t>(m["mean"].get<double>())));
  };
  auto count = [](const nlohmann::json& m) {
    return fmt::format("min {}  max {}  mean {}", FormatCount(m["min"].get<double>()),
                       FormatCount(m["max"].get<double>()), FormatCount(m["mean"].get<double>()));
  };
  return fmt::format("{} repetitions (aggregate over each window):\n  bw    {}\n  iops  {}\n",
                     reps.size(), rate(j["bw_bytes"]), count(j["iops"]));
}

}  // namespace ds::bench
