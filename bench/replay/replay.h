// `dsbench replay DATASET`: what a training job does to storage (docs/dsbench.md#replay).
//
// Access models:
//   map     a PyTorch DataLoader: a seeded global shuffle per epoch, batches of `batch` samples
//           fetched by `workers` threads, at most workers x prefetch batches ahead of the
//           consumer, delivered in order.
//   stream  WebDataset / tf.data: the samples in storage order (sequential shard reads), the
//           same workers and prefetch; the shuffle buffer only reorders in memory, so it does
//           not change what storage sees and is not simulated.
// Workers are threads, not processes: the IO a process-based DataLoader issues is the same
// (one read per file or record per worker), and threads let one dsbench process measure every
// read without inter-process plumbing. The Python cost of decoding is not simulated; give it as
// part of --compute-time if it matters.
//
// Each epoch: the dataset's page-cache residency is measured (mincore) at its start; with
// cache=cold the files are evicted first (fadvise DONTNEED, or drop_caches with drop_caches),
// and residency proves it. A simulated accelerator consumes each batch for compute_time
// seconds; accelerator utilisation is MLPerf Storage's: compute time / wall time, first step
// excluded. The required rate (from gpus x batch / step_time, or samples_per_sec) is compared
// with what was measured: the headroom ratio says whether this storage and layout can feed it.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/layout.h"
#include "slowfs/mount.h"
#include "src/diskstats.h"
#include "src/histogram.h"
#include "src/rpc_bill.h"
#include "src/status.h"
#include "src/storage_decorators.h"

namespace ds::bench {

// The choices of a replay, each with its name (the JSON's and the reports' word) and a parser
// whose error names the option's field ("`mode`: map or stream"), for the CLI to render.
enum class ReplayMode : uint8_t { kMap, kStream };  // a DataLoader's shuffled map, shard order
enum class CacheState : uint8_t { kCold, kWarm };   // evicted before each epoch, or left
enum class OnError : uint8_t { kStop, kSkip };      // a sample that fails to read or check
enum class Loader : uint8_t { kModel, kTorch };     // dsbench's threads, a real DataLoader
const char* Name(ReplayMode m);
const char* Name(CacheState c);
const char* Name(OnError e);
const char* Name(Loader l);
Result<ReplayMode> ParseReplayMode(std::string_view s);
Result<CacheState> ParseCacheState(std::string_view s);
Result<OnError> ParseOnError(std::string_view s);
Result<Loader> ParseLoader(std::string_view s);

struct ReplayOptions {
  std::string dataset;
  ReplayMode mode = ReplayMode::kMap;
  int workers = 4;
  int batch = 32;
  int prefetch = 2;  // batches per worker in flight
  // 0: a worker reads its batch a sample at a time (a Dataset's __getitem__, as torch's default
  // fetcher calls it). N: it reads the batch at once with N reads in flight
  // (LayoutReader::ReadBatch, as dspack.torch.MapDataset(batch_reads=True, inflight=N) does
  // through __getitems__): io_uring locally, the backend's engine on nfs:// and s3://, N threads
  // where a layout has no sample extents (a tree, LMDB). A sample's read time is then its
  // batch's: it reaches the loader with the batch.
  unsigned batch_reads = 0;
  uint64_t seed = 0;
  int epochs = 2;
  CacheState cache = CacheState::kCold;
  bool drop_caches = false;  // cold via /proc/sys/vm/drop_caches (root) instead of fadvise
  double compute_time = 0;   // seconds per batch (0: no accelerator, read as fast as possible)
  int gpus = 1;
  double step_time = 0;        // seconds per step per GPU: sets compute_time and the rate
  double samples_per_sec = 0;  // or the required rate directly
  uint64_t max_samples = 0;    // per epoch (0: all)
  OnError on_error = OnError::kStop;
  // model: the C++ threads above; torch: a real torch DataLoader running the same job in a Python
  // subprocess (bench/replay/torch_loader.h), measured the same way.
  Loader loader = Loader::kModel;
  // Read the dataset through the slow file system (slowfs/mount.h): NFS-like round trips.
  std::optional<SlowfsOptions> slowfs;
  // A bar per epoch on stderr (samples done, MB/s, ETA), drawn only when stderr is a terminal.
  bool progress = false;
  // Block device sampled in /proc/diskstats during each epoch's reads (SystemProbe's
  // block_device of the dataset); empty: none.
  std::string disk_device;
  // This process is rank `rank` of `world` readers of one training job (dsbench replay under
  // MPI, docs/mpi.md). map: the epoch's global permutation (the same on every rank), rank r
  // reading positions r, r + world, ... (torch's DistributedSampler without its padding, so
  // every sample is read exactly once per epoch across ranks). stream: the shards
  // AssignShards(round robin) gives the rank, each front to back (dssync's rule); a source
  // without shards (a tree, a zip) is split as in map mode, in storage order.
  uint32_t rank = 0, world = 1;
  // Runs before each epoch's reads (after a cold epoch's eviction), whether or not a stop was
  // requested here: an MPI job's barrier, where the ranks also agree whether to go on (false:
  // every rank stops before this epoch). Without it, a stop request ends the run locally.
  std::function<Result<bool>(int epoch)> before_epoch;
};

// The sample numbers that rank o.rank reads in epoch `epoch` of a dataset of `size` samples,
// the first `n` of the global order taken (n <= size), in the order read. `shards`: the
// dataset's shards (empty: none). Pure.
std::vector<uint64_t> RankEpochOrder(const ReplayOptions& o, uint64_t size, uint64_t n, int epoch,
                                     const std::vector<ShardRange>& shards);

struct EpochResult {
  int epoch = 0;
  double residency_before = 0;  // fraction of the dataset's pages cached at the start
  double seconds = 0;
  uint64_t samples = 0;
  uint64_t bytes = 0;
  uint64_t opens = 0;
  double first_batch_seconds = 0;
  double au = 0;                // accelerator utilisation (0 when no compute was simulated)
  LatencyHistogram sample_lat;  // per-sample read latency
  LatencyHistogram wait_lat;    // per-step data wait of the accelerator
  std::vector<uint64_t> worker_samples;
  double worker_busy_seconds = 0;  // summed over workers: time spent reading
  // What the loader could deliver if its workers never idled: samples / (busy / workers). With a
  // simulated accelerator the delivered rate is capped by compute; this is not.
  double capacity_samples_per_sec = 0;
  double cpu_seconds = 0;        // dsbench's own (user + system)
  uint64_t errors = 0;           // samples skipped under on_error=skip
  std::optional<DiskUtil> disk;  // disk_device's activity during the epoch's reads
  // The storage bill of the epoch (src/storage_decorators.h), reopening included: what the
  // loader asked of the storage. Unset where dsbench does not do the reads (loader=torch).
  std::optional<StorageOps> ops;
  // The RPC bill of the epoch's reads (src/rpc_bill.h): set when the dataset is read over NFS
  // and dsbench does the reads.
  std::optional<RpcBill> rpc;
};

// MLPerf Storage's bar: the accelerator must be busy at least 90% of the time.
constexpr double kAuBar = 0.9;

struct ReplayResult {
  std::string kind;              // "tree" or the layout
  std::optional<Loader> loader;  // as run (unset: the run did not start)
  uint64_t dataset_samples = 0;
  uint64_t dataset_bytes = 0;
  double required_samples_per_sec = 0;  // 0: no requirement given
  double files_per_sample = 0;          // opens a sample costs (tree: files; layouts: 0)
  double compute_time = 0;              // per batch, as run (from --step-time when given)
  std::vector<EpochResult> epochs;
  bool interrupted = false;
  int workers = 0;                  // as run (fewer than asked when there are fewer batches)
  std::vector<std::string> notes;   // what dsbench changed or fell back to, and why
  std::vector<std::string> errors;  // the first few samples skipped under on_error=skip
  uint64_t error_count = 0;
};

// A failed sample read (a corrupt record, a vanished file) stops the run with its error (naming
// the file, offset and key) under on_error=stop; under skip it is counted, the first few are
// listed, and the run goes on. Cold epochs without permission to drop caches fall back to
// fadvise with a note; more workers than batches are reduced with a note.
// on_start (optional) runs once the dataset is open, before the first epoch: result holds the
// dataset facts and the required rate, so a caller can say up front what the job needs.
Status RunReplay(const ReplayOptions& options, ReplayResult* result,
                 const std::function<void(const ReplayResult&)>& on_start = nullptr);

nlohmann::json ReplayJson(const ReplayOptions& o, const ReplayResult& r);
std::string ReplayText(const ReplayOptions& o, const ReplayResult& r);
// The required rate in words: samples/s, MB/s and opens/s ("" when no requirement was given).
std::string RequirementText(const ReplayOptions& o, const ReplayResult& r);
// The verdict on epoch e of r against the required rate (false when none was given): with a
// simulated accelerator AU >= kAuBar, else the loader's capacity covers the rate.
bool Feeds(const ReplayResult& r, const EpochResult& e);

}  // namespace ds::bench
