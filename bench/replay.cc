#include "bench/replay.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>

#include "bench/latency_report.h"
#include "bench/replay_source.h"
#include "bench/stop.h"
#include "src/human.h"
#include "src/ordered_workers.h"
#include "src/progress.h"
#include "src/random.h"

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

// drop_caches needs root (and a writable /proc/sys): false when refused.
bool DropCaches() {
  ::sync();
  std::ofstream f("/proc/sys/vm/drop_caches");
  f << "3\n";
  f.flush();
  return static_cast<bool>(f);
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

}  // namespace

Status RunReplay(const ReplayOptions& in, ReplayResult* res,
                 const std::function<void(const ReplayResult&)>& on_start) {
  ReplayOptions o = in;
  if (o.workers < 1 || o.batch < 1 || o.epochs < 1 || o.prefetch < 1 || o.gpus < 1) {
    return Status(Code::kInvalidArgument,
                  "--workers, --batch, --prefetch, --epochs and --gpus must be at least 1");
  }
  if (o.mode != "map" && o.mode != "stream") {
    return Status(Code::kInvalidArgument, "--mode: map or stream");
  }
  if (o.cache != "cold" && o.cache != "warm") {
    return Status(Code::kInvalidArgument, "--cache: cold or warm");
  }
  if (o.on_error != "stop" && o.on_error != "skip") {
    return Status(Code::kInvalidArgument, "--on-error: stop or skip");
  }
  if (o.step_time > 0) {
    // One consumer stands for all GPUs: each step eats one batch per GPU in step_time.
    if (o.compute_time == 0) o.compute_time = o.step_time / o.gpus;
    res->required_samples_per_sec = o.gpus * o.batch / o.step_time;
  } else if (o.samples_per_sec > 0) {
    res->required_samples_per_sec = o.samples_per_sec;
  }
  std::string path = o.dataset;
  SlowfsMount mount;
  if (o.slowfs) {
    DS_ASSIGN_OR_RETURN(mount, MountDataset(o.dataset, *o.slowfs, &path));
    res->notes.push_back(fmt::format("read through the slow file system ({}) mounted at {}",
                                     SlowfsText(*o.slowfs), mount.mountpoint()));
  }
  DS_ASSIGN_OR_RETURN(auto src, ReplaySource::Open(path));
  res->kind = src->kind();
  res->dataset_samples = src->size();
  res->dataset_bytes = src->total_bytes();
  res->files_per_sample = src->kind() == "tree" ? static_cast<double>(src->files().size()) /
                                                      static_cast<double>(src->size())
                                                : 0;
  res->compute_time = o.compute_time;
  if (on_start) on_start(*res);
  uint64_t n = o.max_samples ? std::min(o.max_samples, src->size()) : src->size();
  uint64_t batches = (n + o.batch - 1) / o.batch;
  if (static_cast<uint64_t>(o.workers) > batches) {
    res->notes.push_back(fmt::format(
        "{} workers for {} batches of {} samples: the extra workers would only idle; using {}",
        o.workers, batches, o.batch, batches));
    o.workers = static_cast<int>(batches);
  }
  res->workers = o.workers;

  for (int e = 1; e <= o.epochs && !StopRequested(); e++) {
    if (o.cache == "cold") {
      // Closed, evicted, reopened: as a DataLoader without persistent workers reopens its
      // dataset every epoch. Closing first matters: pages a reader has mapped (LMDB maps
      // data.mdb) cannot be evicted while they are mapped.
      src->Close();
      if (o.drop_caches && !DropCaches()) {
        o.drop_caches = false;
        res->notes.push_back(
            "cannot drop caches (writing /proc/sys/vm/drop_caches needs root): evicting the "
            "dataset's files with fadvise DONTNEED instead");
      }
      if (!o.drop_caches) {
        DS_RETURN_IF_ERROR(ReplaySource::Evict(src->files()));
        if (o.slowfs) {
          // The files behind the slow mount too, or "cold" reads would come from the page
          // cache under it (an NFS server's memory) and never from its disk.
          std::vector<std::string> backing;
          for (const auto& f : src->files()) {
            if (f.compare(0, path.size(), path) == 0)
              backing.push_back(o.dataset + f.substr(path.size()));
          }
          DS_RETURN_IF_ERROR(ReplaySource::Evict(backing));
        }
      }
      DS_RETURN_IF_ERROR(src->Reopen());
    }
    EpochResult ep;
    ep.epoch = e;
    DS_ASSIGN_OR_RETURN(ep.residency_before, src->Residency());
    std::vector<uint64_t> order(src->size());
    for (uint64_t i = 0; i < order.size(); i++) order[i] = i;
    if (o.mode == "map") {  // a DataLoader's RandomSampler: a fresh permutation every epoch
      Rng rng(o.seed, static_cast<uint64_t>(e));
      for (uint64_t i = order.size(); i > 1; i--) std::swap(order[i - 1], order[rng.Below(i)]);
    }
    std::vector<WorkerStats> workers(static_cast<size_t>(o.workers));
    std::atomic<int> next_worker{0};
    Status error;
    std::mutex skipped_mu;
    double compute = 0;
    Clock::time_point t0 = Clock::now(), ready_since = t0, first_done = t0;
    double cpu0 = CpuNow();
    Progress bar(o.progress, "samples", n);
    uint64_t bar_bytes = 0;
    RunOrdered<BatchOut>(
        batches, o.workers, static_cast<size_t>(o.workers) * o.prefetch,
        [&](uint64_t b) {
          thread_local int id = -1;
          if (id < 0) id = next_worker++;
          WorkerStats& w = workers[static_cast<size_t>(id) % workers.size()];
          BatchOut out;
          auto b0 = Clock::now();
          for (uint64_t k = b * o.batch; k < std::min<uint64_t>(n, (b + 1) * o.batch); k++) {
            auto s0 = Clock::now();
            auto r = src->Read(order[k]);
            if (!r.ok() && o.on_error == "skip") {
              std::lock_guard lock(skipped_mu);
              if (res->errors.size() < kMaxListedErrors)
                res->errors.push_back(r.status().message());
              res->error_count++;
              w.errors++;
              continue;
            }
            if (!r.ok()) {
              out.status = r.status();
              return out;
            }
            w.lat.Add(static_cast<uint64_t>(std::chrono::nanoseconds(Clock::now() - s0).count()));
            w.samples++;
            w.bytes += r->bytes;
            out.bytes += r->bytes;
            w.opens += r->opens;
            out.samples++;
          }
          w.busy += Secs(Clock::now() - b0);
          return out;
        },
        [&](uint64_t b, BatchOut& out) {
          if (!out.status.ok()) {
            error = out.status;
            return false;
          }
          auto now = Clock::now();
          if (b == 0) {
            ep.first_batch_seconds = Secs(now - t0);
          } else {
            ep.wait_lat.Add(
                static_cast<uint64_t>(std::chrono::nanoseconds(now - ready_since).count()));
          }
          if (o.compute_time > 0) {
            std::this_thread::sleep_for(std::chrono::duration<double>(o.compute_time));
          }
          ready_since = Clock::now();
          if (b == 0) {
            first_done = ready_since;
          } else {
            compute += o.compute_time;
          }
          ep.samples += out.samples;
          bar_bytes += out.bytes;
          bar.Update(ep.samples, bar_bytes);
          return !StopRequested();
        });
    bar.Finish();
    DS_RETURN_IF_ERROR(error);
    auto t1 = Clock::now();
    ep.seconds = Secs(t1 - t0);
    ep.cpu_seconds = CpuNow() - cpu0;
    double after_first = Secs(t1 - first_done);
    ep.au = o.compute_time > 0 && after_first > 0 ? compute / after_first : 0;
    for (const auto& w : workers) {
      ep.sample_lat.Merge(w.lat);
      ep.bytes += w.bytes;
      ep.opens += w.opens;
      ep.worker_samples.push_back(w.samples);
      ep.worker_busy_seconds += w.busy;
      ep.errors += w.errors;
    }
    if (ep.worker_busy_seconds > 0) {
      ep.capacity_samples_per_sec = ep.samples / (ep.worker_busy_seconds / o.workers);
    }
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
                                    : "--samples-per-sec";
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
              {"cache", o.cache},
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
    epochs.push_back(j);
  }
  return {{"dataset", o.dataset},
          {"layout", r.kind},
          {"dataset_samples", r.dataset_samples},
          {"dataset_bytes", r.dataset_bytes},
          {"mode", o.mode},
          {"workers", r.workers ? r.workers : o.workers},
          {"batch", o.batch},
          {"prefetch", o.prefetch},
          {"compute_time", r.compute_time},
          {"required_samples_per_sec", r.required_samples_per_sec},
          {"interrupted", r.interrupted},
          {"on_error", o.on_error},
          {"slowfs", o.slowfs ? json{{"meta_latency_s", o.slowfs->meta_latency},
                                     {"read_latency_s", o.slowfs->read_latency}}
                              : json(nullptr)},
          {"notes", r.notes},
          {"error_count", r.error_count},
          {"errors", r.errors},
          {"epochs", epochs}};
}

std::string ReplayText(const ReplayOptions& o, const ReplayResult& r) {
  std::string t = fmt::format("replay {} ({}: {} samples, {}), mode={}, workers={}, batch={}\n",
                              o.dataset, r.kind, r.dataset_samples, FormatBytes(r.dataset_bytes),
                              o.mode, r.workers ? r.workers : o.workers, o.batch);
  for (const auto& note : r.notes) t += "note: " + note + "\n";
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  for (const auto& e : r.epochs) {
    double s = e.seconds > 0 ? e.seconds : 1e-9;
    auto [mn, mx] = WorkerSpread(e);
    t += fmt::format(
        "epoch {} ({}, {:.1f}% cached at start): {} samples in {}: {} samples/s, {}, {} "
        "opens/s\n",
        e.epoch, o.cache, e.residency_before * 100, e.samples, FormatDuration(e.seconds),
        FormatCount(e.samples / s), FormatRate(e.bytes / s), FormatCount(e.opens / s));
    t += fmt::format(
        "  first batch {}; sample read p50 {} p99 {}; workers {}..{} samples; dsbench CPU "
        "{:.0f}% of {} cores\n",
        FormatDuration(e.first_batch_seconds), FormatDuration(e.sample_lat.Percentile(50) / 1e9),
        FormatDuration(e.sample_lat.Percentile(99) / 1e9), mn, mx, e.cpu_seconds / s * 100 / cores,
        cores);
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
  }
  if (r.error_count > 0) {
    t += fmt::format("{} samples skipped (--on-error skip); the first:\n", r.error_count);
    for (const auto& e : r.errors) t += "  " + e + "\n";
  }
  if (r.interrupted) t += "interrupted: partial results\n";
  return t;
}

}  // namespace ds::bench
