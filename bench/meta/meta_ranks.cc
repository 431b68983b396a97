#include "bench/meta/meta_ranks.h"

#include <fmt/format.h>

#include "bench/common/latency_report.h"
#include "bench/common/rank_wire.h"
#include "src/human.h"

namespace ds::bench {

// Disk statistics are not sent (one disk per node, not per rank).
template <>
struct Wire<MetaPhaseResult> {
  static constexpr auto fields = std::make_tuple(
      WireField{"phase", &MetaPhaseResult::phase}, WireField{"ops", &MetaPhaseResult::ops},
      WireField{"seconds", &MetaPhaseResult::seconds},
      WireField{"interrupted", &MetaPhaseResult::interrupted},
      WireField{"lat", &MetaPhaseResult::lat});
};
template <>
struct Wire<RankMeta> {
  static constexpr auto fields =
      std::make_tuple(WireField{"rank", &RankMeta::rank}, WireField{"host", &RankMeta::host},
                      WireField{"phases", &RankMeta::phases});
};

namespace {

double Rate(uint64_t ops, double seconds) {
  return seconds > 0 ? static_cast<double>(ops) / seconds : 0;
}

}  // namespace

std::string EncodeRankMeta(const RankMeta& r) { return EncodeWire(r); }

Result<RankMeta> DecodeRankMeta(std::string_view text) {
  DS_ASSIGN_OR_RETURN(RankMeta r, DecodeWire<RankMeta>(text, "meta"));
  for (const auto& p : r.phases) {
    if (static_cast<int>(p.phase) < 0 || static_cast<int>(p.phase) >= kMetaPhaseCount) {
      return Status(Code::kCorruption, "a rank's meta results: phase out of range");
    }
  }
  return r;
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
