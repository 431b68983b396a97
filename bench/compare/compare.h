// `dsbench compare SRC_DIR` (docs/dsbench.md#compare): one dataset, every layout, the same job.
//
// 1. Build: each requested layout of the tree SRC_DIR is written under WORK_DIR through the packer
//    library (pack/packer.h; zip through formats/sources/zip.h). "dir" is SRC_DIR itself.
// 2. Replay: the same job (bench/replay/replay.h) against each layout, for each cache state (cold:
//    evicted before every epoch; warm: one priming epoch, then the measured ones), each worker
//    count, on local storage and, with a slow file system, through it (slowfs/mount.h).
//    With job.loader "torch", each run is then repeated by a real torch DataLoader, and the
//    report puts the model's samples/s and the DataLoader's side by side, with their ratio.
// 3. Report: per (storage, cache) the layouts ranked by samples/s with the ratio to the baseline
//    (the directory tree when built, else the first layout), the fewest workers that meet the
//    required rate (worker sweep), a recommendation sentence, JSON, and a self-contained HTML
//    report (bench/compare/report_html.h).
//
// A run's summary is the median epoch's samples/s over its measured epochs; latency percentiles
// and the CDF come from those epochs' merged histograms. Runs rank by samples/s, or, with a
// simulated accelerator (which caps the delivered rate), by the loader's capacity.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench/replay/replay.h"
#include "bench/replay/replay_ranks.h"
#include "slowfs/mount.h"
#include "src/status.h"

namespace ds::bench {

// Everything compare can build, in the default order.
const std::vector<std::string>& CompareLayouts();
inline const std::vector<std::string> kDefaultCompareLayouts = {"dir",  "zip", "native",
                                                                "lmdb", "wds", "tfrecord"};

// One rank of an MPI job (`mpirun -n N dsbench compare`, docs/mpi.md#a-compare-across-nodes),
// from the CLI, which owns the MPI world (bench/mpi_cli.h; mpi::World is the Job). Rank 0 builds
// the layouts (on storage every rank sees) while the others wait at a barrier; they then reuse
// them. Every run is replayed by every rank on its part of each epoch (ReplayOptions::rank/world,
// as `mpirun dsbench replay`), its epochs starting together (EpochBarrier); a gather brings every
// rank's result to rank 0, whose run is the job's (ClusterReplayResult) with its straggler. Before
// each run the ranks agree whether to stop (a stop request on any rank stops them all).
struct CompareRanks {
  Job* job = nullptr;  // REQUIRES: not null
  std::string host;    // this rank's, for the straggler's line
};

// Builds layout `format` of the tree src under out (a fresh directory): the tool hands compare
// the packer (dsbench: pack/'s Convert), so that bench/ does not link pack/.
using LayoutBuilder = std::function<Status(const std::string& src, const std::string& out,
                                           Format format, bool label_from_dir)>;

struct CompareOptions {
  std::string src;             // a directory tree
  LayoutBuilder build_layout;  // required to build any layout but dir and zip
  std::string work_dir;        // where the layouts are built (created; an existing one is reused)
  std::vector<std::string> layouts = kDefaultCompareLayouts;
  std::vector<CacheState> caches = {CacheState::kCold, CacheState::kWarm};
  std::vector<int> workers = {4};       // more than one: a worker sweep
  bool local = true;                    // replay on local storage
  std::optional<SlowfsOptions> slowfs;  // and/or through the slow file system
  // and/or over real NFS (storage "nfs"): nfs_url is where an NFS server serves the local
  // directory nfs_root (empty: work_dir); each layout is replayed from nfs_url/<its path below
  // nfs_root>. A layout outside nfs_root (dir is SRC itself) is an error naming both. Empty
  // nfs_url: none.
  std::string nfs_url;
  std::string nfs_root;
  bool label_from_dir = false;
  bool zip_deflate = true;            // zip members deflated (as `zip -r` does), or stored
  bool rebuild = false;               // rebuild layouts already in WORK_DIR
  std::optional<CompareRanks> ranks;  // under mpirun (null: a plain run)
  // How every layout is read; unset: "natural", each layout as its loaders read it (map for dir,
  // zip and lmdb; stream for the shard layouts). job.mode is not used.
  std::optional<ReplayMode> mode;
  // dataset, mode, cache, workers and slowfs are set per run.
  ReplayOptions job;
};

struct CompareRun {
  std::string layout;
  std::string storage;  // local | slowfs
  CacheState cache = CacheState::kCold;
  int workers = 0;        // as asked (result.workers: as run, fewer when batches are fewer)
  ReplayOptions options;  // as run
  ReplayResult result;
  // Summary over the measured epochs (warm: all but the priming one).
  double samples_per_sec = 0, bytes_per_sec = 0, opens_per_sec = 0, first_batch_seconds = 0;
  double capacity_samples_per_sec = 0;  // what the workers could deliver if never idle
  // The storage bill of the measured epochs (src/storage_decorators.h) and their samples; unset
  // where dsbench did not do the reads.
  std::optional<StorageOps> ops;
  uint64_t ops_samples = 0;
  // The RPC bill of the measured epochs (src/rpc_bill.h), with their samples and bytes: set when
  // the layout is read over NFS.
  std::optional<RpcBill> rpc;
  uint64_t rpc_samples = 0, rpc_bytes = 0;
  // The spread of the ranking score (samples/s, or capacity with an accelerator) over the
  // measured epochs, and how many there were: a median of fewer than 3 is said to be one.
  double score_min = 0, score_max = 0;
  size_t epochs_measured = 0;
  std::optional<double> au, headroom;
  double residency_before = 0;  // median at the measured epochs' start
  LatencyHistogram sample_lat, wait_lat;
  std::optional<double> vs_baseline;
  // job.loader == "torch": the same run by a real torch DataLoader (bench/replay/torch_loader.h),
  // and the model's samples/s over the DataLoader's: how well the model predicts the real loader.
  std::optional<ReplayResult> torch;
  double torch_samples_per_sec = 0;
  std::optional<double> model_vs_torch;
  // Under mpirun (CompareOptions::ranks), on rank 0: the job's last epoch, its straggler and why.
  std::optional<ClusterEpoch> cluster;
  int straggler_rank = 0;
  std::string straggler_host;
};

struct CompareBuild {
  std::string layout;
  std::string path;  // what is replayed
  uint64_t bytes = 0;
  double seconds = 0;  // 0 when reused
  bool reused = false;
};

struct CompareResult {
  uint64_t samples = 0, source_bytes = 0;
  int ranks = 1;  // the MPI job's size: every figure is the job's aggregate
  std::vector<CompareBuild> builds;
  std::vector<CompareRun> runs;
  std::string baseline;  // layout the ratios are against
  std::string recommendation;
  bool interrupted = false;
  // "nfs lmdb: REASON": runs left out because the layout cannot be read on that storage.
  std::vector<std::string> skipped;
};

// on_line (optional) is called with a one-line summary as each build and run finishes.
Status RunCompare(const CompareOptions& options, CompareResult* result,
                  const std::function<void(const std::string&)>& on_line = nullptr);

nlohmann::json CompareJson(const CompareOptions& options, const CompareResult& result);
std::string CompareText(const CompareOptions& options, const CompareResult& result);

// The pieces of a compare run, exposed for tests (bench/compare/compare_report.cc).
// The replay mode a layout runs in: "natural" is map for dir, zip and lmdb (random access by
// index, as their loaders read), stream for the shard layouts; map/stream are kept as given.
ReplayMode CompareMode(std::optional<ReplayMode> mode, const std::string& layout);
// The mode's word in reports: "natural" when unset.
const char* CompareModeName(std::optional<ReplayMode> mode);
// "local", "slowfs" and/or "nfs", in that order, as the options ask.
std::vector<std::string> CompareStorages(const CompareOptions& options);
// The median of v (the mean of the middle two for an even count); 0 when empty.
double Median(std::vector<double> v);
// Fills run's summary (medians over the measured epochs; a warm run's first epoch primes the
// cache and is not counted when there are others) from run->result.
void SummarizeRun(CompareRun* run);
// Fills each run's vs_baseline (same storage, cache and workers) and result->recommendation:
// the best layout where storage hurts most (slowfs if run, cold if run) at the largest worker
// count, which layouts feed the job, and one ranked sentence per (storage, cache).
void RankAndRecommend(const CompareOptions& options, CompareResult* result);

// Whether a run feeds a job that needs `required` samples/s: AU >= 90% with a simulated
// accelerator, else samples/s >= required (false without a requirement).
bool MeetsRate(const CompareRun& run, double required);

// Worker sweep: the fewest workers whose run meets the required rate (AU >= 90% with a simulated
// accelerator, else samples/s >= required); nullopt when none does or no rate was given.
std::optional<int> MinWorkers(const std::vector<const CompareRun*>& points, double required);

// A `replay --workers 1,2,4,8` sweep, judged on each run's last epoch: a point per worker count
// that measured an epoch (an interrupted run may have none), and MinWorkers of them.
struct WorkerSweep {
  std::vector<CompareRun> points;  // workers, samples_per_sec and (with compute) au
  double required = 0;             // samples/s the job needs; 0: none given
  std::optional<int> min_workers;
  bool starves() const { return required > 0 && !min_workers; }
};
// runs: (workers, result) in the order run; the required rate is the first run's.
WorkerSweep SweepWorkers(const std::vector<std::pair<int, ReplayResult>>& runs);
// "\nworker sweep (last epoch): 1: 812 samples/s; 2: ...;\nfewest workers that feed the job: 2\n"
std::string WorkerSweepText(const WorkerSweep& sweep);

// Runs `model`'s job again by a real torch DataLoader and fills run's torch fields.
Status RunTorchTwin(const ReplayOptions& model, CompareRun* run);

// Under mpirun: "straggler rank 1 (node7): slower reads (bytes 1.00x, mean read 1.32x the median
// rank's)", from run.cluster ("" without).
std::string StragglerText(const CompareRun& run);

// "1,2,4,8" -> {1, 2, 4, 8}; each at least 1.
Result<std::vector<int>> ParseWorkerList(const std::string& text);

}  // namespace ds::bench
