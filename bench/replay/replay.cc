#include "bench/replay/replay.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <span>
#include <thread>

#include "bench/common/latency_report.h"
#include "bench/replay/replay_source.h"
#include "bench/replay/torch_loader.h"
#include "formats/shard_assignment.h"
#include "src/epoch_marker.h"
#include "src/human.h"
#include "src/ordered_workers.h"
#include "src/page_cache.h"
#include "src/progress.h"
#include "src/random.h"
#include "src/stop.h"

namespace ds::bench {

using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;
double Secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

double CpuNow() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

constexpr size_t kMaxListedErrors = 5;

struct BatchOut {
  Status status;
  uint64_t samples = 0, bytes = 0;
};

struct WorkerStats {
  LatencyHistogram lat;
  uint64_t samples = 0, bytes = 0, opens = 0, errors = 0;
  double busy = 0;
};

double MeanBytes(const ReplayResult& r) {
  return r.dataset_samples ? static_cast<double>(r.dataset_bytes) / r.dataset_samples : 0;
}

// The fewest and most samples one worker delivered in the epoch (stragglers show as a spread).
std::pair<uint64_t, uint64_t> WorkerSpread(const EpochResult& e) {
  if (e.worker_samples.empty()) return {0, 0};
  auto [mn, mx] = std::minmax_element(e.worker_samples.begin(), e.worker_samples.end());
  return {*mn, *mx};
}

// Checks the job's options; the messages name the CLI's flags, whose names the fields share.
Status CheckOptions(const ReplayOptions& o) {
  if (o.workers < 1 || o.batch < 1 || o.epochs < 1 || o.prefetch < 1 || o.gpus < 1) {
    return Status(Code::kInvalidArgument,
                  "`workers`, `batch`, `prefetch`, `epochs` and `gpus` must be at least 1");
  }
  if (o.loader == Loader::kTorch && o.on_error == OnError::kSkip) {
    return Status(Code::kInvalidArgument,
                  "`on_error=skip` is the model's: a torch DataLoader stops at a sample's error");
  }
  return Status::Ok();
}

// The accelerator's side: compute per batch from the step time, and the rate the job needs.
void ResolveRequirement(ReplayOptions* o, ReplayResult* res) {
  if (o->step_time > 0) {
    // One consumer stands for all GPUs: each step eats one batch per GPU in step_time.
    if (o->compute_time == 0) o->compute_time = o->step_time / o->gpus;
    res->required_samples_per_sec = o->gpus * o->batch / o->step_time;
  } else if (o->samples_per_sec > 0) {
    res->required_samples_per_sec = o->samples_per_sec;
  }
}

// The dataset's facts, as the caller's on_start sees them.
void DescribeDataset(const ReplaySource& src, double compute_time, ReplayResult* res) {
  res->kind = src.kind();
  res->dataset_samples = src.size();
  res->dataset_bytes = src.total_bytes();
  res->files_per_sample = src.kind() == "tree" ? static_cast<double>(src.files().size()) /
                                                     static_cast<double>(src.size())
                                               : 0;
  res->compute_time = compute_time;
}

// `dsbench watch`'s epoch marker (src/epoch_marker.h): the epoch's samples, bytes and the
// simulated accelerator's summed data wait.
void MarkEpochEnd(const EpochResult& ep) {
  MarkEpoch({.start = false,
             .epoch = ep.epoch,
             .samples = ep.samples,
             .bytes = ep.bytes,
             .data_wait_s = ep.wait_lat.mean() * static_cast<double>(ep.wait_lat.count()) / 1e9});
}

// Closed, evicted, reopened: as a DataLoader without persistent workers reopens its dataset
// every epoch. Closing first matters: pages a reader has mapped (LMDB maps data.mdb) cannot be
// evicted while they are mapped. `path` is where src reads the dataset (under a slow mount, or
// o->dataset itself). Falls back from drop_caches to fadvise with a note when not root.
Status MakeCold(ReplayOptions* o, const std::string& path, ReplaySource* src, ReplayResult* res) {
  src->Close();
  if (!src->page_cache()) {
    // A remote backend: this machine caches none of it. Dropping this machine's caches still
    // makes a server that runs here (a test's) read from its disk.
    static constexpr std::string_view kNote =
        "the dataset's storage has no page cache on this machine: every epoch reads from the "
        "server (cold here by construction)";
    if (std::find(res->notes.begin(), res->notes.end(), kNote) == res->notes.end()) {
      res->notes.emplace_back(kNote);
    }
    if (o->drop_caches) DropAllCaches();
    return src->Reopen();
  }
  if (o->drop_caches && !DropAllCaches()) {
    o->drop_caches = false;
    res->notes.push_back(
        "cannot drop caches (writing /proc/sys/vm/drop_caches needs root): evicting the "
        "dataset's files with fadvise DONTNEED instead");
  }
  if (!o->drop_caches) {
    DS_RETURN_IF_ERROR(ReplaySource::Evict(src->files(), o->progress));
    if (o->slowfs) {
      // The files behind the slow mount too, or "cold" reads would come from the page cache
      // under it (an NFS server's memory) and never from its disk.
      std::vector<std::string> backing;
      for (const auto& f : src->files()) {
        if (f.compare(0, path.size(), path) == 0)
          backing.push_back(o->dataset + f.substr(path.size()));
      }
      DS_RETURN_IF_ERROR(ReplaySource::Evict(backing, o->progress));
    }
  }
  return src->Reopen();
}

// The order samples are read in: shard order, or (map) a DataLoader's RandomSampler, a fresh
// permutation every epoch; one rank's part of it (see ReplayOptions::rank).
std::vector<uint64_t> GlobalOrder(const ReplayOptions& o, uint64_t size, uint64_t n, int epoch) {
  std::vector<uint64_t> order(size);
  for (uint64_t i = 0; i < order.size(); i++) order[i] = i;
  if (o.mode == ReplayMode::kMap) {
    Rng rng(o.seed, static_cast<uint64_t>(epoch));
    for (uint64_t i = order.size(); i > 1; i--) std::swap(order[i - 1], order[rng.Below(i)]);
  }
  order.resize(n);
  return order;
}

}  // namespace

std::vector<uint64_t> RankEpochOrder(const ReplayOptions& o, uint64_t size, uint64_t n, int epoch,
                                     const std::vector<ShardRange>& shards) {
  std::vector<uint64_t> global = GlobalOrder(o, size, n, epoch);
  if (o.world <= 1) return global;
  std::vector<uint64_t> mine;
  if (o.mode == ReplayMode::kStream && !shards.empty()) {
    std::vector<uint64_t> bytes;
    for (const auto& s : shards) bytes.push_back(s.bytes);
    for (size_t i : AssignShards(bytes, o.rank, o.world)) {
      for (uint64_t k = 0; k < shards[i].samples; k++) {
        uint64_t sample = shards[i].first_sample + k;
        if (sample < n) mine.push_back(sample);
      }
    }
    return mine;
  }
  for (uint64_t k = o.rank; k < global.size(); k += o.world) mine.push_back(global[k]);
  return mine;
}

namespace {

// One epoch: workers read batches (ReadBatch, on the pool's threads, in any order) and one
// consumer takes them in order (Consume, on the caller's thread), standing for the accelerator.
class Epoch {
 public:
  // `order`: the samples this process reads this epoch, in order (RankEpochOrder).
  Epoch(const ReplayOptions& o, const ReplaySource& src, std::vector<uint64_t> order, int epoch,
        ReplayResult* res)
      : o_(o),
        src_(src),
        n_(order.size()),
        res_(res),
        order_(std::move(order)),
        workers_(static_cast<size_t>(o.workers)),
        bar_(o.progress, "samples", n_) {
    ep_.epoch = epoch;
  }

  Result<EpochResult> Run() {
    DS_ASSIGN_OR_RETURN(ep_.residency_before, src_.Residency());
    uint64_t batches = (n_ + o_.batch - 1) / o_.batch;
    t0_ = ready_since_ = first_done_ = Clock::now();
    double cpu0 = CpuNow();
    RunOrdered<BatchOut>(
        batches, o_.workers, static_cast<size_t>(o_.workers) * o_.prefetch,
        [&](uint64_t b) { return ReadBatch(b); },
        [&](uint64_t b, BatchOut& out) { return Consume(b, out); });
    bar_.Finish();
    DS_RETURN_IF_ERROR(error_);
    Summarize(Clock::now(), CpuNow() - cpu0);
    return std::move(ep_);
  }

 private:
  // A worker reads batch b's samples; under on_error=skip a failed one is counted and listed.
  BatchOut ReadBatch(uint64_t b) {
    thread_local int id = -1;
    if (id < 0) id = next_worker_++;
    WorkerStats& w = workers_[static_cast<size_t>(id) % workers_.size()];
    BatchOut out;
    auto b0 = Clock::now();
    const uint64_t first = b * o_.batch, end = std::min<uint64_t>(n_, (b + 1) * o_.batch);
    if (o_.batch_reads > 0) {
      auto r = src_.ReadBatch(std::span(order_).subspan(first, end - first), o_.batch_reads);
      if (r.ok()) {
        uint64_t ns = static_cast<uint64_t>(std::chrono::nanoseconds(Clock::now() - b0).count());
        for (uint64_t k = first; k < end; k++) w.lat.Add(ns);  // each arrives with its batch
        Tally(w, out, *r, end - first);
        w.busy += Secs(Clock::now() - b0);
        return out;
      }
      if (o_.on_error == OnError::kStop) {
        out.status = r.status();
        return out;
      }
      // Under skip: the batch again a sample at a time, to tell which ones fail.
    }
    for (uint64_t k = first; k < end; k++) {
      auto s0 = Clock::now();
      auto r = src_.Read(order_[k]);
      if (!r.ok() && o_.on_error == OnError::kSkip) {
        std::lock_guard lock(skipped_mu_);
        if (res_->errors.size() < kMaxListedErrors) res_->errors.push_back(r.status().message());
        res_->error_count++;
        w.errors++;
        continue;
      }
      if (!r.ok()) {
        out.status = r.status();
        return out;
      }
      w.lat.Add(static_cast<uint64_t>(std::chrono::nanoseconds(Clock::now() - s0).count()));
      Tally(w, out, *r, 1);
    }
    w.busy += Secs(Clock::now() - b0);
    return out;
  }

  static void Tally(WorkerStats& w, BatchOut& out, const SampleRead& r, uint64_t samples) {
    w.samples += samples;
    w.bytes += r.bytes;
    out.bytes += r.bytes;
    w.opens += r.opens;
    out.samples += samples;
  }

  // The accelerator takes batch b: its data wait is measured, then it computes. False stops.
  bool Consume(uint64_t b, BatchOut& out) {
    if (!out.status.ok()) {
      error_ = out.status;
      return false;
    }
    auto now = Clock::now();
    if (b == 0) {
      ep_.first_batch_seconds = Secs(now - t0_);
    } else {
      ep_.wait_lat.Add(static_cast<uint64_t>(std::chrono::nanoseconds(now - ready_since_).count()));
    }
    if (o_.compute_time > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(o_.compute_time));
    }
    ready_since_ = Clock::now();
    if (b == 0) {
      first_done_ = ready_since_;
    } else {
      compute_ += o_.compute_time;
    }
    ep_.samples += out.samples;
    bar_bytes_ += out.bytes;
    bar_.Update(ep_.samples, bar_bytes_);
    return !StopRequested();
  }

  // Time, AU (compute over the time after the first batch) and the workers' figures.
  void Summarize(Clock::time_point t1, double cpu_seconds) {
    ep_.seconds = Secs(t1 - t0_);
    ep_.cpu_seconds = cpu_seconds;
    double after_first = Secs(t1 - first_done_);
    ep_.au = o_.compute_time > 0 && after_first > 0 ? compute_ / after_first : 0;
    for (const auto& w : workers_) {
      ep_.sample_lat.Merge(w.lat);
      ep_.bytes += w.bytes;
      ep_.opens += w.opens;
      ep_.worker_samples.push_back(w.samples);
      ep_.worker_busy_seconds += w.busy;
      ep_.errors += w.errors;
    }
    if (ep_.worker_busy_seconds > 0) {
      ep_.capacity_samples_per_sec = ep_.samples / (ep_.worker_busy_seconds / o_.workers);
    }
  }

  const ReplayOptions& o_;
  const ReplaySource& src_;
  const uint64_t n_;  // samples this epoch
  ReplayResult* res_;
  std::vector<uint64_t> order_;
  std::vector<WorkerStats> workers_;
  std::atomic<int> next_worker_{0};
  std::mutex skipped_mu_;  // res_->errors, error_count
  EpochResult ep_;
  Status error_;
  double compute_ = 0;
  Clock::time_point t0_, ready_since_, first_done_;
  Progress bar_;
  uint64_t bar_bytes_ = 0;
};

}  // namespace

Status RunReplay(const ReplayOptions& in, ReplayResult* res,
                 const std::function<void(const ReplayResult&)>& on_start) {
  ReplayOptions o = in;
  DS_RETURN_IF_ERROR(CheckOptions(o));
  ResolveRequirement(&o, res);
  std::string path = o.dataset;
  SlowfsMount mount;
  if (o.slowfs) {
    DS_ASSIGN_OR_RETURN(mount, MountDataset(o.dataset, *o.slowfs, &path));
    res->notes.push_back(fmt::format("read through the slow file system ({}) mounted at {}",
                                     SlowfsText(*o.slowfs), mount.mountpoint()));
  }
  // Through a slow mount the scan is a round trip per file (seconds): say what is going on.
  const bool tty = o.progress && ::isatty(STDERR_FILENO);
  if (tty) std::fprintf(stderr, "scanning %s ...\r", path.c_str());
  auto opened = ReplaySource::Open(path);
  if (tty) std::fprintf(stderr, "\033[K");
  DS_ASSIGN_OR_RETURN(auto src, std::move(opened));
  DescribeDataset(*src, o.compute_time, res);
  if (on_start) on_start(*res);
  uint64_t n = o.max_samples ? std::min(o.max_samples, src->size()) : src->size();
  DS_ASSIGN_OR_RETURN(std::vector<ShardRange> shards, src->ShardRanges());
  if (o.world > 1 && o.loader == Loader::kTorch) {
    return Status(Code::kUnsupported,
                  "`loader=torch` as one rank of several is not built yet; use the model loader");
  }
  uint64_t mine = o.world > 1 ? RankEpochOrder(o, src->size(), n, 1, shards).size() : n;
  uint64_t batches = (mine + o.batch - 1) / o.batch;
  if (static_cast<uint64_t>(o.workers) > batches) {
    res->notes.push_back(fmt::format(
        "{} workers for {} batches of {} samples: the extra workers would only idle; using {}",
        o.workers, batches, o.batch, batches));
    o.workers = static_cast<int>(batches);
  }
  res->workers = o.workers;
  res->loader = o.loader;
  std::unique_ptr<TorchLoader> torch;
  if (o.loader == Loader::kTorch) {
    DS_ASSIGN_OR_RETURN(torch, TorchLoader::Start(o, path, res->kind, n));
    res->notes.push_back(fmt::format(
        "read by a real torch DataLoader ({} worker processes, {}), in a Python subprocess",
        o.workers,
        res->kind == "tree" ? "torchvision ImageFolder, raw bytes"
        : o.batch_reads
            ? fmt::format("dspack.torch.MapDataset(batch_reads=True, inflight={})", o.batch_reads)
            : std::string("dspack.torch.MapDataset")));
    if (res->kind == "tree" && o.batch_reads) {
      res->notes.push_back(
          "`batch_reads` not applied: ImageFolder reads a sample at a time (it has no "
          "__getitems__)");
    }
  } else if (o.batch_reads && res->kind == "tree") {
    res->notes.push_back(
        fmt::format("a tree's batch is read by {} threads per worker (a __getitems__ of your own; "
                    "ImageFolder reads a sample at a time)",
                    o.batch_reads));
  }
  RpcBillProbe rpc = src->RpcProbe();
  for (int e = 1; e <= o.epochs && (o.before_epoch || !StopRequested()); e++) {
    src->ResetOps();
    if (o.cache == CacheState::kCold) DS_RETURN_IF_ERROR(MakeCold(&o, path, src.get(), res));
    if (torch) {
      DS_ASSIGN_OR_RETURN(double residency, src->Residency());
      DiskSampler disk(o.disk_device);
      MarkEpochStart(e);
      DS_ASSIGN_OR_RETURN(EpochResult ep, torch->RunEpoch(e, res->files_per_sample));
      MarkEpochEnd(ep);
      ep.disk = disk.Stop();
      ep.residency_before = residency;
      res->epochs.push_back(std::move(ep));
      continue;
    }
    if (o.before_epoch) {
      DS_ASSIGN_OR_RETURN(bool go, o.before_epoch(e));
      if (!go) break;
    }
    std::vector<uint64_t> order = RankEpochOrder(o, src->size(), n, e, shards);
    DiskSampler disk(o.disk_device);  // after the eviction: its IO is not the epoch's
    rpc.Start();
    MarkEpochStart(e);
    DS_ASSIGN_OR_RETURN(EpochResult ep, Epoch(o, *src, std::move(order), e, res).Run());
    MarkEpochEnd(ep);
    ep.disk = disk.Stop();
    ep.ops = src->ops();
    ep.rpc = rpc.Stop();
    res->epochs.push_back(std::move(ep));
  }
  res->interrupted = StopRequested();
  return Status::Ok();
}

std::string RequirementText(const ReplayOptions& o, const ReplayResult& r) {
  double sps = r.required_samples_per_sec, mean_bytes = MeanBytes(r);
  double opens_per_sample = r.files_per_sample;
  if (sps <= 0) return "";
  std::string how = o.step_time > 0 ? fmt::format("{} GPU x batch {} every {}", o.gpus, o.batch,
                                                  FormatDuration(o.step_time))
                                    : "`samples_per_sec`";
  return fmt::format("required ({}): {} samples/s = {}, {} opens/s", how, FormatCount(sps),
                     FormatRate(sps * mean_bytes), FormatCount(sps * opens_per_sample));
}

bool Feeds(const ReplayResult& r, const EpochResult& e) {
  if (r.required_samples_per_sec <= 0) return false;
  return r.compute_time > 0 ? e.au >= kAuBar
                            : e.capacity_samples_per_sec >= r.required_samples_per_sec;
}

json ReplayJson(const ReplayOptions& o, const ReplayResult& r) {
  json epochs = json::array();
  for (const auto& e : r.epochs) {
    double s = e.seconds > 0 ? e.seconds : 1e-9;
    auto [mn, mx] = WorkerSpread(e);
    json j = {{"epoch", e.epoch},
              {"cache", Name(o.cache)},
              {"residency_before", e.residency_before},
              {"seconds", e.seconds},
              {"samples", e.samples},
              {"bytes", e.bytes},
              {"opens", e.opens},
              {"samples_per_sec", e.samples / s},
              {"bytes_per_sec", e.bytes / s},
              {"opens_per_sec", e.opens / s},
              {"first_batch_seconds", e.first_batch_seconds},
              {"sample_lat_ns", LatencyJson(e.sample_lat)},
              {"data_wait_ns", LatencyJson(e.wait_lat)},
              {"workers", {{"min_samples", mn}, {"max_samples", mx}}},
              {"cpu_seconds", e.cpu_seconds},
              {"errors", e.errors},
              {"capacity_samples_per_sec", e.capacity_samples_per_sec},
              {"au", r.compute_time > 0 ? json(e.au) : json(nullptr)}};
    if (r.required_samples_per_sec > 0) {
      j["headroom"] = e.capacity_samples_per_sec / r.required_samples_per_sec;
    }
    if (e.disk) j["disk_util"] = json::array({e.disk->ToJson()});  // fio's layout
    j["storage_ops"] = e.ops ? StorageOpsJson(*e.ops, e.samples) : json(nullptr);
    j["rpc_bill"] = e.rpc ? RpcBillJson(*e.rpc, e.samples, e.bytes) : json(nullptr);
    epochs.push_back(j);
  }
  return {{"dataset", o.dataset},
          {"layout", r.kind},
          {"loader", Name(r.loader.value_or(o.loader))},
          {"dataset_samples", r.dataset_samples},
          {"dataset_bytes", r.dataset_bytes},
          {"mode", Name(o.mode)},
          {"workers", r.workers ? r.workers : o.workers},
          {"batch", o.batch},
          {"prefetch", o.prefetch},
          {"batch_reads", o.batch_reads},
          {"compute_time", r.compute_time},
          {"required_samples_per_sec", r.required_samples_per_sec},
          {"interrupted", r.interrupted},
          {"on_error", Name(o.on_error)},
          {"slowfs", o.slowfs ? json{{"meta_latency_s", o.slowfs->meta_latency},
                                     {"read_latency_s", o.slowfs->read_latency}}
                              : json(nullptr)},
          {"notes", r.notes},
          {"error_count", r.error_count},
          {"errors", r.errors},
          {"epochs", epochs}};
}

std::string ReplayText(const ReplayOptions& o, const ReplayResult& r) {
  std::string t = fmt::format(
      "replay {} ({}: {} samples, {}), loader={}, mode={}, workers={}, batch={}{}\n", o.dataset,
      r.kind, r.dataset_samples, FormatBytes(r.dataset_bytes), Name(r.loader.value_or(o.loader)),
      Name(o.mode), r.workers ? r.workers : o.workers, o.batch,
      o.batch_reads ? fmt::format(", batch reads {} in flight", o.batch_reads) : "");
  for (const auto& note : r.notes) t += "note: " + note + "\n";
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  for (const auto& e : r.epochs) {
    double s = e.seconds > 0 ? e.seconds : 1e-9;
    auto [mn, mx] = WorkerSpread(e);
    t += fmt::format(
        "epoch {} ({}, {:.1f}% cached at start): {} samples in {}: {} samples/s, {}, {} "
        "opens/s\n",
        e.epoch, Name(o.cache), e.residency_before * 100, e.samples, FormatDuration(e.seconds),
        FormatCount(e.samples / s), FormatRate(e.bytes / s), FormatCount(e.opens / s));
    if (r.loader == Loader::kTorch) {  // per-sample reads and per-worker counts are not observable
      t += fmt::format(
          "  first batch {}; DataLoader CPU (its process and workers) {:.0f}% of {} "
          "cores, {:.0f} us per sample\n",
          FormatDuration(e.first_batch_seconds), e.cpu_seconds / s * 100 / cores, cores,
          e.samples ? e.cpu_seconds / e.samples * 1e6 : 0.0);
    } else {
      t += fmt::format(
          "  first batch {}; {} read p50 {} p99 {}; workers {}..{} samples; dsbench CPU "
          "{:.0f}% of {} cores\n",
          FormatDuration(e.first_batch_seconds), o.batch_reads ? "batch" : "sample",
          FormatDuration(e.sample_lat.Percentile(50) / 1e9),
          FormatDuration(e.sample_lat.Percentile(99) / 1e9), mn, mx,
          e.cpu_seconds / s * 100 / cores, cores);
    }
    if (e.ops) t += fmt::format("  storage: {}\n", FormatStorageBill(*e.ops, e.samples));
    if (e.rpc)
      t += fmt::format("  RPCs ({}): {}\n", e.rpc->source, FormatRpcBill(*e.rpc, e.samples));
    if (r.compute_time > 0) {
      t += fmt::format("  accelerator: AU {:.1f}%, data wait p50 {} p99 {}\n", e.au * 100,
                       FormatDuration(e.wait_lat.Percentile(50) / 1e9),
                       FormatDuration(e.wait_lat.Percentile(99) / 1e9));
    }
    if (r.required_samples_per_sec > 0) {
      // The loader's capacity against the requirement; with a simulated accelerator, MLPerf
      // Storage's bar (AU >= 90%) decides.
      double headroom = e.capacity_samples_per_sec / r.required_samples_per_sec;
      bool feeds = Feeds(r, e);
      bool client = e.cpu_seconds / s > 0.8 * cores;
      t += fmt::format("  {}: loader capacity {} samples/s = {:.2f}x the required rate{}\n",
                       feeds ? "FEEDS the job" : "STARVES the job",
                       FormatCount(e.capacity_samples_per_sec), headroom,
                       feeds    ? ""
                       : client ? " (client-bound: dsbench used the CPUs; the storage may do more)"
                                : " (storage-bound: more workers, or a packed layout)");
    }
    // Whether the device was the limit (util near 100%) or had room.
    if (e.disk) t += "  " + e.disk->ToText() + "\n";
  }
  if (r.error_count > 0) {
    t += fmt::format("{} samples skipped (`on_error=skip`); the first:\n", r.error_count);
    for (const auto& e : r.errors) t += "  " + e + "\n";
  }
  if (r.interrupted) t += "interrupted: partial results\n";
  return t;
}

}  // namespace ds::bench
