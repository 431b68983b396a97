// The results of one `dsbench io` run by every rank of an MPI job, and their verdict as one
// (docs/mpi.md). Pure functions: the CLI moves the encoded results to rank 0 (mpi/world.h), so
// this file and its tests need no MPI.
//
// Each rank's jobs are merged into one result per rank (a rank is one client, as fio's
// client_stats has one entry per client). The aggregate is IOR's: total bytes over the job's
// window, from the first rank's start to the last rank's end, on clocks that a common barrier
// aligned (start_ns/end_ns relative to the moment each rank left it). Latency histograms merge
// exactly (fio's bucket layout, src/histogram.h), so aggregate percentiles are those of every
// IO of every rank. The slowest rank is the one with the lowest bandwidth.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "bench/common/latency_report.h"
#include "bench/io/io_job.h"
#include "src/status.h"

namespace ds::bench {

// PATH with every "%r" replaced by the rank (per-rank paths for ranks on one machine).
std::string WithRank(std::string path, int rank);

struct RankIo {
  int rank = 0;
  std::string host;
  JobResult result;  // start_ns/end_ns relative to the start barrier
};

// Lossless: DecodeRankIo(EncodeRankIo(r)) equals r, histograms included.
std::string EncodeRankIo(const RankIo& r);
Result<RankIo> DecodeRankIo(std::string_view text);

struct ClusterIo {
  std::vector<RankIo> ranks;  // in rank order
  JobResult aggregate;        // runtime_ms = the window; bytes, IOs and latencies of all ranks
  double window_ms = 0;
  size_t slowest = 0;        // index into ranks
  double median_bw = 0;      // bytes/s of the median rank
  bool stonewalled = false;  // all ranks stopped when the first finished
};

// REQUIRES: !ranks.empty().
ClusterIo AggregateRanks(std::vector<RankIo> ranks, bool stonewalled);

// The same job run several times (IOR's -i): per repetition the aggregate bandwidth (bytes/s),
// IOPS and window, and their min, max and mean: {"runs": [{"bw_bytes", "iops", "window_ms"}],
// "bw_bytes": {"min", "max", "mean"}, "iops": {...}}. REQUIRES: !reps.empty().
nlohmann::json RepetitionsJson(const std::vector<ClusterIo>& reps);
std::string RepetitionsText(const std::vector<ClusterIo>& reps);

// fio's client/server JSON: {"fio version", "client_stats": [a job object per rank, with
// "hostname", "rank" and "window_ms": {start, end}], "aggregate": {a job object over the window,
// "ranks", "window_ms", "slowest_rank", "stonewall"}}.
nlohmann::json ClusterJson(const IoJobOptions& o, const ClusterIo& c);
// A line per rank, the aggregate's fio block and the slowest rank.
std::string ClusterText(const IoJobOptions& o, const ClusterIo& c);

}  // namespace ds::bench
