#include "bench/meta/meta_ranks.h"

#include <fmt/format.h>

#include "bench/common/latency_report.h"
#include "bench/common/latency_report.h"
#include "src/human.h"

namespace ds::bench {

namespace {

double Rate(uint64_t ops, double seconds) {
  return seconds > 0 ? static_cast<double>(ops) / seconds : 0;
}

}  // namespace

std::string EncodeRankMeta(const RankMeta& r) {
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& p : r.phases) {
    phases.push_back({{"phase", static_cast<int>(p.phase)},
                      {"ops", p.ops},
                      {"seconds", p.seconds},
                      {"interrupted", p.interrupted},
                      {"lat", HistogramWire(p.lat)}});
  }
  return nlohmann::json{{"rank", r.rank}, {"host", r.host}, {"phases", phases}}.dump();
}

Result<RankMeta> DecodeRankMeta(std::string_view text) {
  try {
    auto j = nlohmann::json::parse(text);
    RankMeta r;
    r.rank = j.at("rank").get<int>();
    r.host = j.at("host").get<std::string>();
    for (const auto& w : j.at("phases")) {
      MetaPhaseResult p;
      int phase = w.at("phase").get<int>();
      if (phase < 0 || phase >= kMetaPhaseCount) {
        return Status(Code::kCorruption, "a rank's meta results: phase out of range");
      }
      p.phase = static_cast<MetaPhase>(phase);
      p.ops = w.at("ops").get<uint64_t>();
      p.seconds = w.at("seconds").get<double>();
      p.interrupted = w.at("interrupted").get<bool>();
      DS_RETURN_IF_ERROR(HistogramFromWire(w.at("lat"), &p.lat));
      r.phases.push_back(std::move(p));
    }
    return r;
  } catch (const nlohmann::json::exception& e) {
    return Status(Code::kCorruption, std::string("a rank's meta results: ") + e.what());
  }
}

std::vector<ClusterMetaPhase> AggregateMeta(const std::vector<RankMeta>& ranks) {
  std::vector<ClusterMetaPhase> out;
  size_t n = ranks.empty() ? 0 : ranks[0].phases.size();
  for (const auto& r : ranks) n = std::min(n, r.phases.size());
  for (size_t i = 0; i < n; i++) {
    ClusterMetaPhase c;
    c.phase = ranks[0].phases[i].phase;
    for (size_t k = 0; k < ranks.size(); k++) {
      const MetaPhaseResult& p = ranks[k].phases[i];
      c.ops += p.ops;
      c.lat.Merge(p.lat);
      c.interrupted |= p.interrupted;
      if (p.seconds > c.seconds) {
        c.seconds = p.seconds;
        c.slowest = k;
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

nlohmann::json ClusterMetaJson(const std::vector<RankMeta>& ranks,
                               const std::vector<ClusterMetaPhase>& phases, bool shared_dir) {
  nlohmann::json js = nlohmann::json::array();
  for (size_t i = 0; i < phases.size(); i++) {
    const ClusterMetaPhase& c = phases[i];
    nlohmann::json rs = nlohmann::json::array();
    for (const auto& r : ranks) {
      const MetaPhaseResult& p = r.phases[i];
      rs.push_back({{"rank", r.rank},
                    {"hostname", r.host},
                    {"ops", p.ops},
                    {"seconds", p.seconds},
                    {"ops_per_sec", Rate(p.ops, p.seconds)}});
    }
    js.push_back({{"name", MetaPhaseName(c.phase)},
                  {"ops", c.ops},
                  {"seconds", c.seconds},
                  {"ops_per_sec", Rate(c.ops, c.seconds)},
                  {"interrupted", c.interrupted},
                  {"lat_ns", LatencyJson(c.lat)},
                  {"slowest_rank", ranks[c.slowest].rank},
                  {"ranks", rs}});
  }
  return {{"world", ranks.size()}, {"shared_dir", shared_dir}, {"phases", js}};
}

std::string ClusterMetaText(const std::vector<RankMeta>& ranks,
                            const std::vector<ClusterMetaPhase>& phases, bool shared_dir) {
  std::string s = fmt::format(
      "{} ranks, {} (aggregate: all ranks' ops over the slowest rank's time, as mdtest)\n",
      ranks.size(), shared_dir ? "one directory shared by all" : "a directory per rank");
  for (size_t i = 0; i < phases.size(); i++) {
    const ClusterMetaPhase& c = phases[i];
    s += fmt::format("{:<8} ops/s={} ({} ops/{}){}  slowest rank {} ({})\n", MetaPhaseName(c.phase),
                     FormatCount(Rate(c.ops, c.seconds)), c.ops, FormatDuration(c.seconds),
                     c.interrupted ? " interrupted" : "", ranks[c.slowest].rank,
                     ranks[c.slowest].host);
    std::string per;
    for (const auto& r : ranks) {
      per += fmt::format(" {}:{}", r.rank, FormatCount(Rate(r.phases[i].ops, r.phases[i].seconds)));
    }
    s += "  per rank ops/s:" + per + "\n";
    s += LatencyText("lat", c.lat);
  }
  return s;
}

}  // namespace ds::bench
