// `dsbench replay` run by every rank of an MPI job: N nodes of one training job, each reading
// its part of every epoch (ReplayOptions::rank/world), and rank 0's view of them all
// (docs/mpi.md#one-training-job-dsbench-replay). Pure functions: the CLI moves the encoded
// results (bench/mpi_cli.h).
//
// Per epoch: the aggregate is all ranks' samples over the longest rank's epoch (the epochs
// start on a common barrier), against the required rate x world. The straggler is the rank
// whose epoch took longest; why it is slow is the larger of two ratios to the median rank: the
// bytes it read (more bytes: an unbalanced split) or its mean per-sample read latency (slower
// reads: its node, link or storage path); neither, when both are within 5 % of the median.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "bench/replay/replay.h"
#include "src/histogram.h"
#include "src/job.h"
#include "src/status.h"

namespace ds::bench {

struct RankEpoch {
  int epoch = 0;
  uint64_t samples = 0, bytes = 0, errors = 0, opens = 0;
  double seconds = 0, au = 0, residency_before = 0;
  double first_batch_seconds = 0, capacity_samples_per_sec = 0, cpu_seconds = 0;
  bool feeds = false;           // this rank's own verdict (Feeds), with a required rate
  LatencyHistogram sample_lat;  // per-sample read latency
  LatencyHistogram wait_lat;    // the accelerator's per-step data wait
};

struct RankReplay {
  int rank = 0;
  std::string host;
  double required_samples_per_sec = 0;  // per rank (0: none given)
  std::vector<RankEpoch> epochs;
};

RankReplay RankReplayOf(int rank, const std::string& host, const ReplayResult& r);
std::string EncodeRankReplay(const RankReplay& r);  // lossless
Result<RankReplay> DecodeRankReplay(std::string_view text);

struct ClusterEpoch {
  int epoch = 0;
  uint64_t samples = 0, bytes = 0;
  double seconds = 0;  // the longest rank's
  double samples_per_sec = 0;
  double required_samples_per_sec = 0;  // per rank x world (0: none)
  bool feeds = true;                    // every rank feeds its accelerator
  size_t straggler = 0;                 // index into ClusterReplay::ranks
  double median_seconds = 0;
  double bytes_ratio = 1, latency_ratio = 1;  // the straggler's, to the median rank's
  std::string reason;                         // "more bytes", "slower reads" or "neither ..."
};

struct ClusterReplay {
  std::vector<RankReplay> ranks;  // rank order
  std::vector<ClusterEpoch> epochs;
  bool starves() const;  // with a required rate: the last epoch does not feed
};

// REQUIRES: every rank ran the same epochs.
ClusterReplay AggregateReplay(std::vector<RankReplay> ranks);

// The job's replay as one ReplayResult (`mpirun dsbench compare` ranks layouts by it): the facts
// of `rank0`'s (the dataset, workers, notes), the required rate x world, and per epoch the ranks'
// samples, bytes, opens, errors and CPU summed, histograms merged, the longest seconds and first
// batch, the mean residency; AU and the loader's capacity are the slowest rank's (capacity x
// world), so Feeds() on it holds exactly when every rank feeds its accelerator.
ReplayResult ClusterReplayResult(const ReplayResult& rank0, const ClusterReplay& c);

// ReplayOptions::before_epoch for one rank of a job: the ranks start each epoch together and
// agree to stop there (Ctrl-C reaches each rank at its own moment; one that stopped alone would
// leave the others at this barrier). False: some rank was asked to stop.
std::function<Result<bool>(int epoch)> EpochBarrier(Job& job);
// Collective: whether any rank of the job was asked to stop (StopRequested, src/stop.h).
Result<bool> AnyRankStopping(Job& job, std::string_view what);

nlohmann::json ClusterReplayJson(const ReplayOptions& o, const ClusterReplay& c);
std::string ClusterReplayText(const ReplayOptions& o, const ClusterReplay& c);

}  // namespace ds::bench
