#include "bench/io_job.h"

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

#include "bench/latency_report.h"
#include "bench/stop.h"
#include "src/fd.h"
#include "src/human.h"
#include "src/io_engine.h"
#include "src/random.h"
#include "src/system_probe.h"

namespace ds::bench {

Result<RwMode> ParseRw(const std::string& t) {
  if (t == "read") return RwMode::kRead;
  if (t == "write") return RwMode::kWrite;
  if (t == "randread") return RwMode::kRandRead;
  if (t == "randwrite") return RwMode::kRandWrite;
  if (t == "randrw") return RwMode::kRandRw;
  if (t == "rw" || t == "readwrite") return RwMode::kRw;
  return Status(
      Code::kInvalidArgument,
      "--rw " + t + ": choose read, write, randread, randwrite, rw (readwrite) or randrw");
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
  }
  return "?";
}

namespace {

using Clock = std::chrono::steady_clock;
int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}
bool Random(RwMode m) {
  return m == RwMode::kRandRead || m == RwMode::kRandWrite || m == RwMode::kRandRw;
}
bool Writes(RwMode m) {
  return m == RwMode::kWrite || m == RwMode::kRandWrite || m == RwMode::kRandRw || m == RwMode::kRw;
}
bool Reads(RwMode m) { return m != RwMode::kWrite && m != RwMode::kRandWrite; }

}  // namespace

namespace {

double CpuSeconds(const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; }

// fio's io_u_map buckets: 1, 2, 4, 8, 16, 32, >=64 (level); 0, 1-4, 5-8, 9-16, 17-32, 33-64,
// >64 (submit/complete).
size_t LevelBucket(unsigned depth) {
  size_t b = 0;
  for (unsigned lim = 1; b < 6 && depth > lim; lim <<= 1) b++;
  return depth >= 64 ? 6 : b;
}
size_t CountBucket(size_t n) {
  if (n == 0) return 0;
  size_t b = 1;
  for (size_t lim = 4; b < 6 && n > lim; lim <<= 1) b++;
  return n > 64 ? 6 : b;
}

// Sleeps until `until` (steady ns) or a stop; false when stopped.
bool SleepUntil(int64_t until, const std::atomic<bool>& stop) {
  while (NowNs() < until) {
    if (StopRequested() || stop.load(std::memory_order_relaxed)) return false;
    int64_t left = until - NowNs();
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(left, 10'000'000)));
  }
  return true;
}

// `stop`: the run failed elsewhere (a job that could not start) or the caller stopped it
// (IoHooks::poll); stop issuing, drain and count what completes.
Status RunOne(const IoJobOptions& o, const std::string& file, unsigned job,
              const std::atomic<bool>& stop, JobResult* out) {
  const int64_t thread_start = NowNs();
  if (!o.cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : o.cpus) CPU_SET(c, &set);
    if (int e = pthread_setaffinity_np(pthread_self(), sizeof set, &set); e != 0) {
      return Status::FromErrno(e, fmt::format("cpus_allowed: cannot run job {} there", job),
                               Code::kInvalidArgument);
    }
  }
  if (o.startdelay > 0 &&
      !SleepUntil(thread_start + static_cast<int64_t>(o.startdelay * 1e9), stop)) {
    return Status::Ok();
  }
  std::unique_ptr<IoLogs> logs;
  if (o.logs.any()) {
    DS_ASSIGN_OR_RETURN(logs, IoLogs::Open(o.logs, job));
  }
  EngineOptions eo;
  eo.depth = o.iodepth;
  eo.sqpoll = o.sqthread_poll;
  DS_ASSIGN_OR_RETURN(auto engine, MakeEngine(o.ioengine, eo));
  int flags = (Writes(o.rw) ? O_RDWR : O_RDONLY) | (o.direct ? O_DIRECT : 0);
  auto fd = OpenFile(file, flags);
  if (!fd.ok()) {
    if (o.direct && fd.status().err() == EINVAL) {
      struct statfs sf;
      std::string fs =
          ::statfs(file.c_str(), &sf) == 0 ? FsTypeName(static_cast<uint64_t>(sf.f_type)) : "?";
      return Status(Code::kInvalidArgument, fmt::format("{}: this file system ({}) refuses "
                                                        "O_DIRECT; use --direct=0",
                                                        file, fs));
    }
    return fd.status();
  }
  if (o.invalidate) ::posix_fadvise(fd->get(), 0, 0, POSIX_FADV_DONTNEED);
  unsigned depth = o.iodepth;
  const BlockSizes sizes = o.IoSizes();
  std::vector<AlignedBuffer> bufs;
  for (unsigned i = 0; i < depth; i++) {
    bufs.emplace_back(sizes.max);
    Rng(o.seed, job * 1000 + i).Fill(bufs.back().data(), sizes.max);
  }
  if (o.registerfiles || o.sqthread_poll) {  // as fio: SQPOLL implies registered files
    int f = fd->get();
    DS_RETURN_IF_ERROR(engine->RegisterFiles(std::span<const int>(&f, 1)));
  }
  if (o.fixedbufs) {
    std::vector<std::span<char>> spans;
    for (auto& b : bufs) spans.emplace_back(b.data(), b.size());
    DS_RETURN_IF_ERROR(engine->RegisterBuffers(spans));
  }
  std::vector<IoRequest> reqs(depth);
  std::vector<int64_t> issued(depth);
  std::vector<IoRequest*> done(depth);
  const uint64_t seed = o.randrepeat ? o.seed : o.seed ^ static_cast<uint64_t>(NowNs());
  Rng rng(seed, job + 1);
  IoPattern pattern(sizes, o.distribution, o.size, Random(o.rw));
  // fio's io_size, else size x loops (each loop a pass over the region, whole blocks of bs).
  const uint64_t pass = sizes.fixed() ? o.size / o.bs * o.bs : o.size;
  const uint64_t limit = o.io_size ? o.io_size : pass * o.loops;
  uint64_t issued_bytes = 0, issued_ios = 0, writes_issued = 0;
  bool last_write = false;
  int64_t start = NowNs();
  int64_t ramp_end = start + static_cast<int64_t>(o.ramp_time * 1e9);
  int64_t deadline = o.runtime > 0 ? ramp_end + static_cast<int64_t>(o.runtime * 1e9) : INT64_MAX;
  int64_t measured_from = ramp_end;
  bool ramping = o.ramp_time > 0;
  rusage ru0{}, ru1{};
  ::getrusage(RUSAGE_THREAD, &ru0);
  std::vector<unsigned> free_slots;
  for (unsigned i = 0; i < depth; i++) free_slots.push_back(depth - 1 - i);
  auto more = [&](int64_t now) {
    if (StopRequested() || stop.load(std::memory_order_relaxed) || now >= deadline) return false;
    return o.time_based || issued_bytes < limit;
  };
  // rate / rate_iops: the earliest time the next IO may go (fio spreads IOs evenly).
  auto next_allowed = [&]() -> int64_t {
    int64_t t = 0;
    if (o.rate) t = start + static_cast<int64_t>(static_cast<double>(issued_bytes) * 1e9 / o.rate);
    if (o.rate_iops) {
      t = std::max(t, start + static_cast<int64_t>(static_cast<double>(issued_ios) * 1e9 /
                                                   static_cast<double>(o.rate_iops)));
    }
    return t;
  };
  // fio's bw/iops samples: one per 500 ms window, per direction the job does.
  constexpr int64_t kWindowNs = 500'000'000;
  int64_t window_start = measured_from;
  uint64_t window_bytes[2] = {0, 0}, window_ios[2] = {0, 0};
  auto close_window = [&](int64_t now) {
    double secs = static_cast<double>(now - window_start) / 1e9;
    DirStats* dirs[2] = {&out->read, &out->write};
    bool does[2] = {Reads(o.rw), Writes(o.rw)};
    for (int d = 0; d < 2; d++) {
      if (!does[d]) continue;
      dirs[d]->bw_kib.Add(static_cast<double>(window_bytes[d]) / 1024 / secs);
      dirs[d]->iops.Add(static_cast<double>(window_ios[d]) / secs);
      window_bytes[d] = window_ios[d] = 0;
    }
    window_start = now;
  };
  // fio's sync block counts the fsyncs of fsync=N; end_fsync's is not an IO of the job.
  auto do_fsync = [&](bool count) -> Status {
    int64_t t0 = NowNs();
    if (::fsync(fd->get()) != 0) return Status::FromErrno(errno, file + ": fsync");
    if (count && !ramping) {
      out->syncs++;
      out->sync_lat.Add(static_cast<uint64_t>(NowNs() - t0));
    }
    return Status::Ok();
  };
  int64_t now = start;
  unsigned queued = 0;  // queued since the last Submit
  // fio's clat runs from submission to completion. A synchronous engine does the IO inside Queue,
  // so its clock starts before Queue; an asynchronous one's starts when Submit hands the request
  // to the kernel (with iodepth_batch_submit > 1, a request may wait queued before that).
  const bool sync_engine = (engine->flags() & kEngineSync) != 0;
  std::vector<unsigned> unsubmitted;
  auto submit = [&]() -> Status {
    DS_ASSIGN_OR_RETURN(unsigned n, engine->Submit());
    if (!sync_engine && n > 0) out->depth.submit[CountBucket(n)]++;
    int64_t t = NowNs();
    for (unsigned slot : unsubmitted) issued[slot] = t;
    unsubmitted.clear();
    queued = 0;
    return Status::Ok();
  };
  while (true) {
    while (!free_slots.empty() && more(now)) {
      if (o.rate || o.rate_iops) {
        int64_t t = next_allowed();
        if (t > now) {
          if (engine->inflight() > 0) break;  // reap meanwhile
          if (!SleepUntil(t, stop)) break;
          now = NowNs();
          continue;
        }
      }
      // fio's fsync=N: after every N writes issued, an fsync before the next IO (none after the
      // job's last write).
      if (o.fsync_every && last_write && writes_issued % o.fsync_every == 0) {
        DS_RETURN_IF_ERROR(do_fsync(true));
        last_write = false;
      }
      unsigned slot = free_slots.back();
      free_slots.pop_back();
      IoRequest& r = reqs[slot];
      bool write =
          o.rw == RwMode::kWrite || o.rw == RwMode::kRandWrite ||
          ((o.rw == RwMode::kRandRw || o.rw == RwMode::kRw) && rng.Below(100) >= o.rwmixread);
      const IoPattern::Io io = pattern.Next(rng);
      r = IoRequest{write ? IoRequest::Op::kWrite : IoRequest::Op::kRead,
                    fd->get(),
                    bufs[slot].data(),
                    io.len,
                    o.offset + io.offset,
                    0,
                    reinterpret_cast<void*>(static_cast<uintptr_t>(slot)),
                    o.fixedbufs ? static_cast<int>(slot) : -1};
      if (sync_engine) issued[slot] = NowNs();
      DS_RETURN_IF_ERROR(engine->Queue(&r));
      out->depth.level[LevelBucket(engine->inflight())]++;
      if (sync_engine) out->depth.submit[CountBucket(1)]++;
      if (!sync_engine) unsubmitted.push_back(slot);
      issued_bytes += io.len;
      issued_ios++;
      last_write = write;
      writes_issued += write ? 1 : 0;
      // fio's iodepth_batch_submit: hand requests to the kernel in groups of this many.
      if (++queued >= o.iodepth_batch_submit) DS_RETURN_IF_ERROR(submit());
    }
    if (engine->inflight() == 0) {
      if (more(NowNs()) && (o.rate || o.rate_iops)) {  // paced: wait for the next slot
        if (!SleepUntil(next_allowed(), stop)) break;
        now = NowNs();
        continue;
      }
      break;
    }
    DS_RETURN_IF_ERROR(submit());
    DS_ASSIGN_OR_RETURN(size_t n, engine->Reap(1, done));
    now = NowNs();
    out->depth.complete[CountBucket(n)]++;
    if (ramping && now >= ramp_end) {  // ramp over: start counting from here
      ramping = false;
      measured_from = window_start = now;
      out->read = DirStats{};
      out->write = DirStats{};
      out->depth = DepthStats{};
      window_bytes[0] = window_bytes[1] = window_ios[0] = window_ios[1] = 0;
      ::getrusage(RUSAGE_THREAD, &ru0);
    }
    for (size_t k = 0; k < n; k++) {
      IoRequest* r = done[k];
      auto slot = static_cast<unsigned>(reinterpret_cast<uintptr_t>(r->user));
      if (r->result < 0) {
        return ErrnoStatus(r->result, fmt::format("{}: {} of {} at offset {}", file,
                                                  r->op == IoRequest::Op::kRead ? "read" : "write",
                                                  r->len, r->offset));
      }
      const bool read = r->op == IoRequest::Op::kRead;
      DirStats& d = read ? out->read : out->write;
      if (!ramping) {
        d.io_bytes += static_cast<uint64_t>(r->result);
        d.ios++;
        if (static_cast<size_t>(r->result) < r->len) d.short_ios++;
        d.clat.Add(static_cast<uint64_t>(now - issued[slot]));
        window_bytes[read ? 0 : 1] += static_cast<uint64_t>(r->result);
        window_ios[read ? 0 : 1]++;
        if (logs) {
          logs->Complete(static_cast<uint64_t>(now - thread_start) / 1000000, read ? 0 : 1,
                         static_cast<uint64_t>(r->result),
                         static_cast<uint64_t>(now - issued[slot]));
        }
      }
      free_slots.push_back(slot);
    }
    if (!ramping && now - window_start >= kWindowNs) close_window(now);
    if (o.thinktime > 0) {
      SleepUntil(NowNs() + static_cast<int64_t>(o.thinktime * 1e9 * static_cast<double>(n)), stop);
      now = NowNs();
    }
  }
  if (o.end_fsync && Writes(o.rw)) DS_RETURN_IF_ERROR(do_fsync(false));
  ::getrusage(RUSAGE_THREAD, &ru1);
  if (logs) {
    logs->Tick(static_cast<uint64_t>(NowNs() - thread_start) / 1000000, true);
    DS_RETURN_IF_ERROR(logs->Close());
  }
  out->start_ns = measured_from;
  out->end_ns = NowNs();
  out->runtime_ms = static_cast<double>(out->end_ns - measured_from) / 1e6;
  out->elapsed = static_cast<double>(out->end_ns - thread_start) / 1e9;
  double secs = out->runtime_ms / 1e3;
  if (secs > 0) {
    out->usr_cpu = (CpuSeconds(ru1.ru_utime) - CpuSeconds(ru0.ru_utime)) / secs * 100;
    out->sys_cpu = (CpuSeconds(ru1.ru_stime) - CpuSeconds(ru0.ru_stime)) / secs * 100;
  }
  out->ctx = static_cast<uint64_t>((ru1.ru_nvcsw - ru0.ru_nvcsw) + (ru1.ru_nivcsw - ru0.ru_nivcsw));
  out->majf = static_cast<uint64_t>(ru1.ru_majflt - ru0.ru_majflt);
  out->minf = static_cast<uint64_t>(ru1.ru_minflt - ru0.ru_minflt);
  return Status::Ok();
}

Status CheckJob(const IoJobOptions& o) {
  if (o.bs == 0 || o.iodepth == 0 || o.numjobs == 0 || o.iodepth_batch_submit == 0 ||
      o.loops == 0) {
    return Status(Code::kInvalidArgument,
                  "--bs, --iodepth, --numjobs, --loops and --iodepth_batch_submit must be "
                  "positive");
  }
  if (o.numjobs > kMaxJobs || o.iodepth > kMaxIodepth || o.rwmixread > 100) {
    return Status(Code::kInvalidArgument,
                  fmt::format("--numjobs {} / --iodepth {} / --rwmixread {}: the ranges are "
                              "1..{}, 1..{} and 0..100",
                              o.numjobs, o.iodepth, o.rwmixread, kMaxJobs, kMaxIodepth));
  }
  const BlockSizes sizes = o.IoSizes();
  for (uint64_t bs : {sizes.min, sizes.max}) {
    if (o.direct && bs % 512 != 0) {
      return Status(Code::kInvalidArgument,
                    fmt::format("--bs {} is not a multiple of 512, which --direct=1 needs", bs));
    }
  }
  for (const auto& [bs, pct] : sizes.split) {
    if (o.direct && bs % 512 != 0) {
      return Status(Code::kInvalidArgument,
                    fmt::format("--bssplit's {} is not a multiple of 512, which --direct=1 needs",
                                bs));
    }
  }
  if (o.time_based && o.runtime <= 0) {
    return Status(Code::kInvalidArgument,
                  "--time_based needs --runtime (fio refuses it too), e.g. --runtime=30s");
  }
  return Status::Ok();
}

}  // namespace

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
    DS_ASSIGN_OR_RETURN(IoRun part, RunTogether(in.subspan(begin, end - begin), hooks));
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
    DS_RETURN_IF_ERROR(CheckJob(o));
    clones += o.numjobs;
  }
  if (clones > kMaxJobs) {
    return Status(Code::kInvalidArgument,
                  fmt::format("{} jobs in all; at most {} run at once", clones, kMaxJobs));
  }
  // Lay out the files: a clone's own (<name>.<clone>.0) when PATH is a directory and the job
  // names no file, else one per spec.
  struct Clone {
    size_t spec;
    unsigned index;
    std::string file;
  };
  std::vector<Clone> plan;
  std::vector<TestFile> made;
  auto cleanup = [&] {
    for (size_t i = 0; i < made.size(); i++) {
      if (made[i].created && !specs[plan[i].spec].keep) ::unlink(made[i].path.c_str());
    }
  };
  Status ready;
  for (size_t s = 0; s < specs.size() && ready.ok(); s++) {
    IoJobOptions& o = specs[s];
    struct stat st;
    const bool own = o.file_name.empty() && ::stat(o.path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    std::string shared;
    for (unsigned c = 0; c < o.numjobs && ready.ok(); c++) {
      if (!own && c > 0) {
        plan.push_back({s, c, shared});
        made.push_back(TestFile{shared, false});
        continue;
      }
      IoJobOptions oc = o;
      if (own) oc.file_name = fmt::format("{}.{}.0", o.name, c);
      auto f = PrepareTestFile(oc);
      if (!f.ok()) {
        ready = f.status();
        break;
      }
      if (c == 0) o.size = oc.size;  // from an existing file when size was 0
      if (oc.IoSizes().max > oc.size) {
        ready = Status(Code::kInvalidArgument, fmt::format("--bs {} is larger than --size {}",
                                                           oc.IoSizes().max, oc.size));
      }
      shared = f->path;
      plan.push_back({s, c, f->path});
      made.push_back(*f);
    }
  }
  if (hooks.ready) {
    Status s = hooks.ready(ready);
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
  for (size_t j = 0; j < plan.size(); j++) {
    const IoJobOptions& o = specs[plan[j].spec];
    results[j].name = o.name;
    results[j].spec = plan[j].spec;
    try {
      threads.emplace_back([&, j] {
        errors[j] = RunOne(specs[plan[j].spec], plan[j].file, plan[j].index, stop, &results[j]);
        finished.fetch_add(1, std::memory_order_release);
      });
    } catch (const std::system_error& e) {  // EAGAIN: a limit on threads or memory
      spawn = Status(Code::kIOError, fmt::format("job {} of {}: cannot start a thread ({}); "
                                                 "lower --numjobs",
                                                 j + 1, plan.size(), e.what()));
      stop = true;  // the jobs already running stop issuing and drain
      break;
    }
  }
  if (hooks.poll) {
    while (finished.load(std::memory_order_acquire) < threads.size()) {
      if (!stop.load() && hooks.poll(false)) stop = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    hooks.poll(true);
  }
  for (auto& t : threads) t.join();
  IoRun run{{}, disk.Stop()};
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
