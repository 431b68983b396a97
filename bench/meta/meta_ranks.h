// `dsbench meta` run by every rank of an MPI job (mdtest's model, docs/mpi.md): each phase
// starts on a barrier across ranks, and a phase's aggregate rate is all ranks' operations over
// the slowest rank's time, as mdtest computes it. Pure functions; the CLI moves the encoded
// results (bench/mpi_cli.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "bench/meta/meta.h"
#include "src/status.h"

namespace ds::bench {

struct RankMeta {
  int rank = 0;
  std::string host;
  std::vector<MetaPhaseResult> phases;  // disk stats are not sent
};

std::string EncodeRankMeta(const RankMeta& r);  // lossless but for disk stats
Result<RankMeta> DecodeRankMeta(std::string_view text);

struct ClusterMetaPhase {
  MetaPhase phase = MetaPhase::kCreate;
  uint64_t ops = 0;
  double seconds = 0;  // the slowest rank's
  LatencyHistogram lat;
  size_t slowest = 0;  // index into the ranks
  bool interrupted = false;
};

// REQUIRES: every rank ran the same phases.
std::vector<ClusterMetaPhase> AggregateMeta(const std::vector<RankMeta>& ranks);

// {"world", "shared_dir", "phases": [{"name", "ops", "seconds", "ops_per_sec", "lat_ns",
// "slowest_rank", "ranks": [{"rank", "hostname", "ops", "seconds", "ops_per_sec"}]}]}
nlohmann::json ClusterMetaJson(const std::vector<RankMeta>& ranks,
                               const std::vector<ClusterMetaPhase>& phases, bool shared_dir);
std::string ClusterMetaText(const std::vector<RankMeta>& ranks,
                            const std::vector<ClusterMetaPhase>& phases, bool shared_dir);

}  // namespace ds::bench
