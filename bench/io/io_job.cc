#include "bench/io/io_job.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <system_error>
#include <thread>

#include "bench/common/latency_report.h"
#include "bench/io/io_worker.h"
#include "src/fd.h"
#include "src/human.h"
#include "src/io_engine.h"
#include "src/random.h"
#include "src/stop.h"
#include "src/system_probe.h"

namespace ds::bench {

Result<RwMode> ParseRw(const std::string& t) {
  if (t == "read") return RwMode::kRead;
  if (t == "write") return RwMode::kWrite;
  if (t == "randread") return RwMode::kRandRead;
  if (t == "randwrite") return RwMode::kRandWrite;
  if (t == "randrw") return RwMode::kRandRw;
  if (t == "rw" || t == "readwrite") return RwMode::kRw;
  if (t == "trim") return RwMode::kTrim;
  if (t == "randtrim") return RwMode::kRandTrim;
  return Status(
      Code::kInvalidArgument,
      "`rw` " + t +
          ": choose read, write, randread, randwrite, rw (readwrite), randrw, trim or randtrim");
}

const char* RwName(RwMode m) {
  switch (m) {
    case RwMode::kRead:
      return "read";
    case RwMode::kWrite:
      return "write";
    case RwMode::kRandRead:
      return "randread";
    case RwMode::kRandWrite:
      return "randwrite";
    case RwMode::kRandRw:
      return "randrw";
    case RwMode::kRw:
      return "rw";
    case RwMode::kTrim:
      return "trim";
    case RwMode::kRandTrim:
      return "randtrim";
  }
  return "?";
}

Status IoJobOptions::Validate() const {
  const IoJobOptions& o = *this;
  if (o.bs == 0 || o.iodepth == 0 || o.numjobs == 0 || o.iodepth_batch_submit == 0 ||
      o.loops == 0) {
    return Status(Code::kInvalidArgument,
                  "`bs`, `iodepth`, `numjobs`, `loops` and `iodepth_batch_submit` must be "
                  "positive");
  }
  if (o.numjobs > kMaxJobs || o.iodepth > kMaxIodepth || o.rwmixread > 100) {
    return Status(Code::kInvalidArgument,
                  fmt::format("`numjobs` {} / `iodepth` {} / `rwmixread` {}: the ranges are "
                              "1..{}, 1..{} and 0..100",
                              o.numjobs, o.iodepth, o.rwmixread, kMaxJobs, kMaxIodepth));
  }
  const BlockSizes sizes = o.IoSizes();
  for (uint64_t bs : {sizes.min, sizes.max}) {
    if (o.direct && bs % 512 != 0) {
      return Status(Code::kInvalidArgument,
                    fmt::format("`bs` {} is not a multiple of 512, which `direct=1` needs", bs));
    }
  }
  for (const auto& [bs, pct] : sizes.split) {
    if (o.direct && bs % 512 != 0) {
      return Status(
          Code::kInvalidArgument,
          fmt::format("`bssplit`'s {} is not a multiple of 512, which `direct=1` needs", bs));
    }
  }
  if (o.verify != VerifyKind::kNone) {
    if (!Writes(o.rw)) {
      return Status(Code::kInvalidArgument,
                    "verify checks the blocks a job writes; give a writing `rw` (write, "
                    "randwrite, rw, randrw)");
    }
    if (!o.IoSizes().fixed() || o.bs < kVerifyMinBlock) {
      return Status(Code::kInvalidArgument,
                    fmt::format("verify needs one block size of at least {} bytes (no bsrange "
                                "or bssplit)",
                                kVerifyMinBlock));
    }
  }
  if (o.hipri && o.ioengine != "io_uring") {
    return Status(Code::kInvalidArgument,
                  "hipri (polled completions) is an io_uring option here; use ioengine=io_uring");
  }
  if ((o.ioengine == "nfs") != !o.nfs_url.empty()) {
    return Status(Code::kInvalidArgument,
                  o.nfs_url.empty()
                      ? "ioengine=nfs needs `nfs_url`, e.g. nfs_url=nfs://SERVER/EXPORT"
                      : "`nfs_url` is for ioengine=nfs; add it");
  }
  if (o.ioengine == "nfs" &&
      (o.direct || o.fsync_every || o.end_fsync || Trims(o.rw) || o.verify != VerifyKind::kNone ||
       o.registerfiles || o.fixedbufs || o.sqthread_poll)) {
    return Status(Code::kInvalidArgument,
                  "ioengine=nfs reads and writes through libnfs: no direct, fsync, end_fsync, "
                  "trim, verify or io_uring options (fio's nfs engine has none either)");
  }
  if (o.gtod_reduce && o.logs.any()) {
    return Status(Code::kInvalidArgument,
                  "gtod_reduce turns off the per-IO clock that the bw/lat/iops logs are made "
                  "from; drop one of them");
  }
  if (o.time_based && o.runtime <= 0) {
    return Status(Code::kInvalidArgument,
                  "`time_based` needs `runtime` (fio refuses it too), e.g. `runtime=30s`");
  }
  return Status::Ok();
}

Result<IoRun> RunIoJobs(const IoJobOptions& options, const IoHooks& hooks) {
  return RunIoJobs(std::span<const IoJobOptions>(&options, 1), hooks);
}

namespace {

Result<IoRun> RunTogether(std::span<const IoJobOptions> in, const IoHooks& hooks);

}  // namespace

Result<IoRun> RunIoJobs(std::span<const IoJobOptions> in, const IoHooks& hooks) {
  // fio's stonewall: a job waits for every job before it, so the run is a sequence of sets of
  // jobs that run together.
  IoRun all;
  for (size_t begin = 0; begin < in.size();) {
    size_t end = begin + 1;
    while (end < in.size() && !in[end].stonewall) end++;
    IoHooks part_hooks = hooks;  // LiveJob::spec numbers the jobs of `in`, not of this part
    if (hooks.live) {
      part_hooks.live = [&hooks, begin](std::span<const LiveJob> jobs, double s, bool done) {
        std::vector<LiveJob> all(jobs.begin(), jobs.end());
        for (auto& j : all) j.spec += begin;
        hooks.live(all, s, done);
      };
    }
    DS_ASSIGN_OR_RETURN(IoRun part, RunTogether(in.subspan(begin, end - begin), part_hooks));
    all.start_barrier_ns = part.start_barrier_ns;
    for (auto& r : part.jobs) {
      r.spec += begin;
      all.jobs.push_back(std::move(r));
    }
    if (part.disk && all.disk) {
      all.disk->Add(*part.disk);
    } else if (part.disk) {
      all.disk = part.disk;
    }
    begin = end;
    if (StopRequested()) break;
  }
  return all;
}

namespace {

Result<IoRun> RunTogether(std::span<const IoJobOptions> in, const IoHooks& hooks) {
  std::vector<IoJobOptions> specs(in.begin(), in.end());
  size_t clones = 0;
  for (const auto& o : specs) {
    DS_RETURN_IF_ERROR(o.Validate());
    clones += o.numjobs;
  }
  if (clones > kMaxJobs) {
    return Status(Code::kInvalidArgument,
                  fmt::format("{} jobs in all; at most {} run at once", clones, kMaxJobs));
  }
  // Lay out the files: a clone's own (<name>.<clone>.<file>, nrfiles of them) when PATH is a
  // directory and the job names no file, else one per spec, shared by its clones.
  struct Clone {
    size_t spec;
    unsigned index;
    std::vector<std::string> files;
  };
  std::vector<Clone> plan;
  std::vector<std::pair<TestFile, size_t>> made;  // and the spec that made it
  auto cleanup = [&] {
    for (const auto& [f, s] : made) {
      if (f.created && !specs[s].keep) {
        if (specs[s].ioengine == "nfs") {
          RemoveRemoteTestFile(specs[s], f.path);
        } else {
          ::unlink(f.path.c_str());
        }
      }
    }
  };
  Status ready;
  for (size_t s = 0; s < specs.size() && ready.ok(); s++) {
    IoJobOptions& o = specs[s];
    const bool remote = o.ioengine == "nfs";
    struct stat st;
    bool own = false;
    if (remote && o.file_name.empty()) {
      auto dir = RemoteTargetIsDir(o);
      if (!dir.ok()) {
        ready = dir.status();
        break;
      }
      own = *dir;
    } else if (!remote) {
      own = o.file_name.empty() && ::stat(o.path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    }
    if (!own && o.nrfiles > 1) {
      ready = Status(Code::kInvalidArgument,
                     fmt::format("job {}: nrfiles={} makes the files {}.N.F in a directory; give "
                                 "a directory (`directory`) rather than one file",
                                 o.name, o.nrfiles, o.name));
      break;
    }
    for (unsigned c = 0; c < o.numjobs && ready.ok(); c++) {
      if (!own && c > 0) {
        plan.push_back({s, c, plan.back().files});
        continue;
      }
      Clone clone{s, c, {}};
      for (unsigned k = 0; k < o.nrfiles && ready.ok(); k++) {
        IoJobOptions oc = o;
        if (own) oc.file_name = fmt::format("{}.{}.{}", o.name, c, k);
        auto f = remote ? PrepareRemoteTestFile(oc) : PrepareTestFile(oc);
        if (!f.ok()) {
          ready = f.status();
          break;
        }
        if (c == 0 && k == 0) o.size = oc.size;  // from an existing file when size was 0
        if (oc.IoSizes().max > oc.size) {
          ready = Status(Code::kInvalidArgument, fmt::format("`bs` {} is larger than `size` {}",
                                                             oc.IoSizes().max, oc.size));
        }
        clone.files.push_back(f->path);
        made.push_back({*f, s});
      }
      plan.push_back(std::move(clone));
    }
  }
  int64_t start_barrier_ns = 0;
  if (hooks.job) {
    Status s = hooks.job->Agree(ready, "every rank's test file");
    start_barrier_ns = SteadyIoClock().Now();
    if (ready.ok()) ready = s;
  }
  if (!ready.ok()) {
    cleanup();
    return ready;
  }
  std::vector<JobResult> results(plan.size());
  std::vector<Status> errors(plan.size());
  std::vector<std::thread> threads;
  DiskSampler disk(specs[0].disk_device);  // after the files are laid out: their writes don't count
  Status spawn;
  std::atomic<bool> stop{false};
  std::atomic<unsigned> finished{0};
  std::vector<LiveCounters> live(plan.size());
  for (size_t j = 0; j < plan.size(); j++) {
    const IoJobOptions& o = specs[plan[j].spec];
    results[j].name = o.name;
    results[j].spec = plan[j].spec;
    try {
      threads.emplace_back([&, j] {
        errors[j] = RunClone(specs[plan[j].spec], plan[j].files, plan[j].index, stop, &live[j],
                             &results[j]);
        finished.fetch_add(1, std::memory_order_release);
      });
    } catch (const std::system_error& e) {  // EAGAIN: a limit on threads or memory
      spawn = Status(Code::kIOError, fmt::format("job {} of {}: cannot start a thread ({}); "
                                                 "lower `numjobs`",
                                                 j + 1, plan.size(), e.what()));
      stop = true;  // the jobs already running stop issuing and drain
      break;
    }
  }
  if (hooks.poll || hooks.live) {
    const auto t0 = std::chrono::steady_clock::now();
    auto next_live = t0;
    std::vector<LiveJob> snapshot(plan.size());
    for (size_t j = 0; j < plan.size(); j++) {
      const IoJobOptions& o = specs[plan[j].spec];
      const uint64_t pass = o.IoSizes().fixed() ? o.size / o.bs * o.bs : o.size;
      snapshot[j] = {plan[j].spec,
                     plan[j].index,
                     0,
                     0,
                     o.time_based ? 0
                     : o.io_size  ? o.io_size
                                  : pass * o.nrfiles * o.loops,
                     o.runtime};
    }
    auto report = [&](bool done) {
      for (size_t j = 0; j < plan.size(); j++) {
        snapshot[j].bytes = live[j].bytes.load(std::memory_order_relaxed);
        snapshot[j].ios = live[j].ios.load(std::memory_order_relaxed);
      }
      hooks.live(snapshot,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                 done);
    };
    while (finished.load(std::memory_order_acquire) < threads.size()) {
      if (hooks.poll && !stop.load() && hooks.poll(false)) stop = true;
      if (hooks.live && std::chrono::steady_clock::now() >= next_live) {
        report(false);
        next_live += std::chrono::milliseconds(100);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (hooks.poll) hooks.poll(true);
    if (hooks.live) report(true);
  }
  for (auto& t : threads) t.join();
  IoRun run{{}, disk.Stop(), start_barrier_ns};
  cleanup();
  DS_RETURN_IF_ERROR(spawn);
  for (const auto& e : errors) DS_RETURN_IF_ERROR(e);
  // group_reporting: a group's clones as one result, in the order the groups first appear.
  std::vector<bool> taken(results.size(), false);
  for (size_t i = 0; i < results.size(); i++) {
    if (taken[i]) continue;
    const IoJobOptions& o = specs[results[i].spec];
    if (!o.group_reporting) {
      run.jobs.push_back(std::move(results[i]));
      continue;
    }
    std::vector<JobResult> group;
    for (size_t k = i; k < results.size(); k++) {
      const IoJobOptions& ok = specs[results[k].spec];
      if (!taken[k] && ok.group_reporting && ok.groupid == o.groupid) {
        taken[k] = true;
        group.push_back(results[k]);
      }
    }
    JobResult g = MergeJobResults(o.name, group);
    g.spec = results[i].spec;
    run.jobs.push_back(std::move(g));
  }
  return run;
}

}  // namespace

}  // namespace ds::bench
