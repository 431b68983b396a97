#include "bench/replay/replay_ranks.h"

#include <fmt/format.h>

#include <algorithm>

#include "bench/common/latency_report.h"
#include "bench/common/rank_wire.h"
#include "src/human.h"
#include "src/stop.h"

namespace ds::bench {

template <>
struct Wire<RankEpoch> {
  static constexpr auto fields = std::make_tuple(
      WireField{"epoch", &RankEpoch::epoch}, WireField{"samples", &RankEpoch::samples},
      WireField{"bytes", &RankEpoch::bytes}, WireField{"errors", &RankEpoch::errors},
      WireField{"seconds", &RankEpoch::seconds}, WireField{"au", &RankEpoch::au},
      WireField{"residency", &RankEpoch::residency_before}, WireField{"feeds", &RankEpoch::feeds},
      WireField{"opens", &RankEpoch::opens},
      WireField{"first_batch", &RankEpoch::first_batch_seconds},
      WireField{"capacity", &RankEpoch::capacity_samples_per_sec},
      WireField{"cpu", &RankEpoch::cpu_seconds}, WireField{"sample_lat", &RankEpoch::sample_lat},
      WireField{"wait_lat", &RankEpoch::wait_lat});
};
template <>
struct Wire<RankReplay> {
  static constexpr auto fields =
      std::make_tuple(WireField{"rank", &RankReplay::rank}, WireField{"host", &RankReplay::host},
                      WireField{"required", &RankReplay::required_samples_per_sec},
                      WireField{"epochs", &RankReplay::epochs});
};

namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double PerSecond(double n, double seconds) { return seconds > 0 ? n / seconds : 0; }

// A ratio to the median rank below this is not a cause.
constexpr double kNoise = 1.05;

}  // namespace

RankReplay RankReplayOf(int rank, const std::string& host, const ReplayResult& r) {
  RankReplay rr;
  rr.rank = rank;
  rr.host = host;
  rr.required_samples_per_sec = r.required_samples_per_sec;
  for (const auto& e : r.epochs) {
    RankEpoch x;
    x.epoch = e.epoch;
    x.samples = e.samples;
    x.bytes = e.bytes;
    x.errors = e.errors;
    x.seconds = e.seconds;
    x.au = e.au;
    x.residency_before = e.residency_before;
    x.opens = e.opens;
    x.first_batch_seconds = e.first_batch_seconds;
    x.capacity_samples_per_sec = e.capacity_samples_per_sec;
    x.cpu_seconds = e.cpu_seconds;
    x.feeds = r.required_samples_per_sec > 0 && Feeds(r, e);
    x.sample_lat = e.sample_lat;
    x.wait_lat = e.wait_lat;
    rr.epochs.push_back(std::move(x));
  }
  return rr;
}

std::string EncodeRankReplay(const RankReplay& r) { return EncodeWire(r); }

Result<RankReplay> DecodeRankReplay(std::string_view text) {
  return DecodeWire<RankReplay>(text, "replay");
}

bool ClusterReplay::starves() const {
  return !ranks.empty() && ranks[0].required_samples_per_sec > 0 && !epochs.empty() &&
         !epochs.back().feeds;
}

ClusterReplay AggregateReplay(std::vector<RankReplay> ranks) {
  ClusterReplay c;
  c.ranks = std::move(ranks);
  size_t n_epochs = c.ranks.empty() ? 0 : c.ranks[0].epochs.size();
  for (const auto& r : c.ranks) n_epochs = std::min(n_epochs, r.epochs.size());
  for (size_t e = 0; e < n_epochs; e++) {
    ClusterEpoch ce;
    ce.epoch = c.ranks[0].epochs[e].epoch;
    std::vector<double> secs, bytes, lat;
    for (size_t i = 0; i < c.ranks.size(); i++) {
      const RankEpoch& x = c.ranks[i].epochs[e];
      ce.samples += x.samples;
      ce.bytes += x.bytes;
      if (x.seconds > ce.seconds) {
        ce.seconds = x.seconds;
        ce.straggler = i;
      }
      ce.feeds = ce.feeds && x.feeds;
      secs.push_back(x.seconds);
      bytes.push_back(static_cast<double>(x.bytes));
      lat.push_back(x.sample_lat.mean());
    }
    ce.samples_per_sec = PerSecond(static_cast<double>(ce.samples), ce.seconds);
    ce.required_samples_per_sec =
        c.ranks[0].required_samples_per_sec * static_cast<double>(c.ranks.size());
    ce.median_seconds = Median(secs);
    const RankEpoch& s = c.ranks[ce.straggler].epochs[e];
    double mb = Median(bytes), ml = Median(lat);
    ce.bytes_ratio = mb > 0 ? static_cast<double>(s.bytes) / mb : 1;
    ce.latency_ratio = ml > 0 ? s.sample_lat.mean() / ml : 1;
    if (std::max(ce.bytes_ratio, ce.latency_ratio) < kNoise) {
      ce.reason = "neither more bytes nor slower reads (its CPU or scheduling)";
    } else {
      ce.reason = ce.bytes_ratio >= ce.latency_ratio ? "more bytes" : "slower reads";
    }
    c.epochs.push_back(std::move(ce));
  }
  return c;
}

ReplayResult ClusterReplayResult(const ReplayResult& rank0, const ClusterReplay& c) {
  ReplayResult r = rank0;
  double world = static_cast<double>(c.ranks.size());
  r.required_samples_per_sec = rank0.required_samples_per_sec * world;
  r.epochs.clear();
  r.error_count = 0;
  for (size_t e = 0; e < c.epochs.size(); e++) {
    EpochResult x;
    x.epoch = c.epochs[e].epoch;
    x.seconds = c.epochs[e].seconds;
    x.au = 1;
    double capacity = -1;
    for (const auto& rank : c.ranks) {
      const RankEpoch& y = rank.epochs[e];
      x.samples += y.samples;
      x.bytes += y.bytes;
      x.opens += y.opens;
      x.errors += y.errors;
      x.cpu_seconds += y.cpu_seconds;
      x.residency_before += y.residency_before / world;
      x.first_batch_seconds = std::max(x.first_batch_seconds, y.first_batch_seconds);
      x.au = std::min(x.au, y.au);
      if (capacity < 0 || y.capacity_samples_per_sec < capacity) {
        capacity = y.capacity_samples_per_sec;
      }
      x.sample_lat.Merge(y.sample_lat);
      x.wait_lat.Merge(y.wait_lat);
    }
    x.capacity_samples_per_sec = std::max(0.0, capacity) * world;
    r.error_count += x.errors;
    r.epochs.push_back(std::move(x));
  }
  return r;
}

nlohmann::json ClusterReplayJson(const ReplayOptions& o, const ClusterReplay& c) {
  nlohmann::json epochs = nlohmann::json::array();
  for (size_t e = 0; e < c.epochs.size(); e++) {
    const ClusterEpoch& ce = c.epochs[e];
    nlohmann::json ranks = nlohmann::json::array();
    for (const auto& r : c.ranks) {
      const RankEpoch& x = r.epochs[e];
      ranks.push_back({{"rank", r.rank},
                       {"hostname", r.host},
                       {"samples", x.samples},
                       {"bytes", x.bytes},
                       {"errors", x.errors},
                       {"seconds", x.seconds},
                       {"samples_per_sec", PerSecond(static_cast<double>(x.samples), x.seconds)},
                       {"residency_before", x.residency_before},
                       {"wait_p50_ns", x.wait_lat.Percentile(50)},
                       {"wait_p99_ns", x.wait_lat.Percentile(99)},
                       {"au", x.au},
                       {"feeds", x.feeds}});
    }
    const RankReplay& s = c.ranks[ce.straggler];
    epochs.push_back({{"epoch", ce.epoch},
                      {"aggregate",
                       {{"samples", ce.samples},
                        {"bytes", ce.bytes},
                        {"seconds", ce.seconds},
                        {"samples_per_sec", ce.samples_per_sec},
                        {"required_samples_per_sec", ce.required_samples_per_sec},
                        {"feeds", ce.feeds}}},
                      {"ranks", ranks},
                      {"straggler",
                       {{"rank", s.rank},
                        {"hostname", s.host},
                        {"seconds", ce.seconds},
                        {"median_seconds", ce.median_seconds},
                        {"bytes_ratio", ce.bytes_ratio},
                        {"read_latency_ratio", ce.latency_ratio},
                        {"reason", ce.reason}}}});
  }
  return {{"world", c.ranks.size()},
          {"mode", Name(o.mode)},
          {"split", o.mode == ReplayMode::kMap ? "every world-th sample of the epoch's permutation"
                                               : "shard i to rank i % world"},
          {"epochs", epochs},
          {"starves", c.starves()}};
}

std::string ClusterReplayText(const ReplayOptions& o, const ClusterReplay& c) {
  std::string s = fmt::format("{} ranks, one training job ({}: {})\n", c.ranks.size(), Name(o.mode),
                              o.mode == ReplayMode::kMap
                                  ? "each rank every world-th sample of the epoch's permutation"
                                  : "shard i to rank i % world");
  for (size_t e = 0; e < c.epochs.size(); e++) {
    const ClusterEpoch& ce = c.epochs[e];
    std::string need;
    if (ce.required_samples_per_sec > 0) {
      need = fmt::format(" (required {} x {} = {} samples/s: {})", c.ranks.size(),
                         FormatCount(c.ranks[0].required_samples_per_sec),
                         FormatCount(ce.required_samples_per_sec), ce.feeds ? "FEEDS" : "STARVES");
    }
    s += fmt::format("epoch {} ({}): aggregate {} samples/s, {} samples in {}, {}{}\n", ce.epoch,
                     Name(o.cache), FormatCount(ce.samples_per_sec), ce.samples,
                     FormatDuration(ce.seconds),
                     FormatRate(PerSecond(static_cast<double>(ce.bytes), ce.seconds)), need);
    for (const auto& r : c.ranks) {
      const RankEpoch& x = r.epochs[e];
      s += fmt::format("  rank {:>3} {:<12} {:>7} samples {:>9} samples/s  wait p50 {} p99 {}",
                       r.rank, r.host, x.samples,
                       FormatCount(PerSecond(static_cast<double>(x.samples), x.seconds)),
                       FormatDuration(static_cast<double>(x.wait_lat.Percentile(50)) / 1e9),
                       FormatDuration(static_cast<double>(x.wait_lat.Percentile(99)) / 1e9));
      if (x.au > 0) s += fmt::format("  AU {:.0f}%", x.au * 100);
      if (r.required_samples_per_sec > 0) s += x.feeds ? "  feeds" : "  STARVES";
      s += "\n";
    }
    const RankReplay& st = c.ranks[ce.straggler];
    s += fmt::format(
        "  straggler: rank {} ({}) took {} against the median rank's {}: {} (bytes {:.2f}x, "
        "mean sample read {:.2f}x the median rank's)\n",
        st.rank, st.host, FormatDuration(ce.seconds), FormatDuration(ce.median_seconds), ce.reason,
        ce.bytes_ratio, ce.latency_ratio);
  }
  return s;
}

Result<bool> AnyRankStopping(Job& job, std::string_view what) {
  DS_ASSIGN_OR_RETURN(uint64_t n, job.Sum(StopRequested() ? 1 : 0, what));
  return n > 0;
}

std::function<Result<bool>(int epoch)> EpochBarrier(Job& job) {
  return [&job](int e) -> Result<bool> {
    DS_ASSIGN_OR_RETURN(bool stop, AnyRankStopping(job, "the start of epoch " + std::to_string(e)));
    return !stop;
  };
}

}  // namespace ds::bench
