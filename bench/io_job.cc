#include "bench/io_job.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
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
  return Status(Code::kInvalidArgument,
                "--rw " + t + ": choose read, write, randread, randwrite or randrw");
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
  return m == RwMode::kWrite || m == RwMode::kRandWrite || m == RwMode::kRandRw;
}

}  // namespace

Result<TestFile> PrepareTestFile(IoJobOptions& o) {
  struct stat st;
  if (::stat(o.path.c_str(), &st) != 0) {
    return Status::FromErrno(errno, o.path + ": give an existing directory or file",
                             Code::kInvalidArgument);
  }
  TestFile f;
  if (S_ISBLK(st.st_mode) && !o.allow_device) {
    return Status(Code::kInvalidArgument, o.path +
                                              ": a block device; dsbench refuses to touch "
                                              "one unless --allow-device is given");
  }
  if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
    f.path = o.path;
    if (o.size == 0 && static_cast<uint64_t>(st.st_size) > o.offset)
      o.size = static_cast<uint64_t>(st.st_size) - o.offset;
    if (S_ISREG(st.st_mode) && Writes(o.rw) && !o.allow_overwrite) {
      return Status(Code::kInvalidArgument,
                    fmt::format("{}: an existing file that dsbench did not create; --rw {} would "
                                "overwrite it. Give a directory (dsbench makes its own test "
                                "file there), or --allow-overwrite to write into this file",
                                o.path, RwName(o.rw)));
    }
    if (S_ISREG(st.st_mode) && !Writes(o.rw) &&
        static_cast<uint64_t>(st.st_size) < o.offset + o.size) {
      return Status(
          Code::kInvalidArgument,
          o.offset ? fmt::format("{}: {} bytes, less than offset {} + --size {}", o.path,
                                 st.st_size, o.offset, o.size)
                   : fmt::format("{}: {} bytes, less than --size {}", o.path, st.st_size, o.size));
    }
    return f;
  }
  if (!S_ISDIR(st.st_mode))
    return Status(Code::kInvalidArgument, o.path + ": not a file or directory");
  if (o.size == 0)
    return Status(Code::kInvalidArgument, "--size is needed when PATH is a directory");
  f.path = o.path + "/" + (o.file_name.empty() ? "dsbench." + o.name + ".0" : o.file_name);
  const uint64_t bytes = o.offset + o.size;
  struct stat fst;
  if (::stat(f.path.c_str(), &fst) == 0 && static_cast<uint64_t>(fst.st_size) >= bytes) return f;
  struct statvfs vfs;
  if (::statvfs(o.path.c_str(), &vfs) == 0) {
    uint64_t avail = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    if (avail < bytes) {
      return Status(Code::kNoSpace, fmt::format("{}: not enough free space for a {} test file "
                                                "({} free); lower --size",
                                                o.path, FormatBytes(bytes), FormatBytes(avail)));
    }
  }
  DS_ASSIGN_OR_RETURN(OwnedFd fd, OpenFile(f.path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
  f.created = true;
  std::string buf(1 << 20, '\0');
  Rng rng(o.seed, 0xF11E);
  for (uint64_t done = 0; done < bytes;) {
    size_t k = static_cast<size_t>(std::min<uint64_t>(buf.size(), bytes - done));
    rng.Fill(buf.data(), k);  // incompressible
    Status s = WriteFull(fd.get(), buf.data(), k, f.path);
    if (!s.ok()) {
      ::unlink(f.path.c_str());
      return s;
    }
    done += k;
  }
  if (::fsync(fd.get()) != 0) {
    ::unlink(f.path.c_str());
    return Status::FromErrno(errno, f.path + ": fsync");
  }
  return f;
}

namespace {

double CpuSeconds(const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; }

// `stop`: the run failed elsewhere (a job that could not start) or the caller stopped it
// (IoHooks::poll); stop issuing, drain and count what completes.
Status RunOne(const IoJobOptions& o, const std::string& file, unsigned job,
              const std::atomic<bool>& stop, JobResult* out) {
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
  std::vector<AlignedBuffer> bufs;
  for (unsigned i = 0; i < depth; i++) {
    bufs.emplace_back(o.bs);
    Rng(o.seed, job * 1000 + i).Fill(bufs.back().data(), o.bs);
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
  Rng rng(o.seed, job + 1);
  uint64_t blocks = o.size / o.bs;
  uint64_t seq = 0, issued_bytes = 0;
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
    return o.time_based || issued_bytes < o.size;
  };
  int64_t now = start;
  unsigned queued = 0;  // queued since the last Submit
  // fio's clat runs from submission to completion. A synchronous engine does the IO inside Queue,
  // so its clock starts before Queue; an asynchronous one's starts when Submit hands the request
  // to the kernel (with iodepth_batch_submit > 1, a request may wait queued before that).
  const bool sync_engine = (engine->flags() & kEngineSync) != 0;
  std::vector<unsigned> unsubmitted;
  auto submit = [&]() -> Status {
    DS_RETURN_IF_ERROR(engine->Submit().status());
    int64_t t = NowNs();
    for (unsigned slot : unsubmitted) issued[slot] = t;
    unsubmitted.clear();
    queued = 0;
    return Status::Ok();
  };
  while (true) {
    while (!free_slots.empty() && more(now)) {
      unsigned slot = free_slots.back();
      free_slots.pop_back();
      IoRequest& r = reqs[slot];
      bool write = o.rw == RwMode::kWrite || o.rw == RwMode::kRandWrite ||
                   (o.rw == RwMode::kRandRw && rng.Below(100) >= o.rwmixread);
      uint64_t block = Random(o.rw) ? rng.Below(blocks) : seq++ % blocks;
      r = IoRequest{write ? IoRequest::Op::kWrite : IoRequest::Op::kRead,
                    fd->get(),
                    bufs[slot].data(),
                    o.bs,
                    o.offset + block * o.bs,
                    0,
                    reinterpret_cast<void*>(static_cast<uintptr_t>(slot)),
                    o.fixedbufs ? static_cast<int>(slot) : -1};
      if (sync_engine) issued[slot] = NowNs();
      DS_RETURN_IF_ERROR(engine->Queue(&r));
      if (!sync_engine) unsubmitted.push_back(slot);
      issued_bytes += o.bs;
      // fio's iodepth_batch_submit: hand requests to the kernel in groups of this many.
      if (++queued >= o.iodepth_batch_submit) DS_RETURN_IF_ERROR(submit());
    }
    if (engine->inflight() == 0) break;
    DS_RETURN_IF_ERROR(submit());
    DS_ASSIGN_OR_RETURN(size_t n, engine->Reap(1, done));
    now = NowNs();
    if (ramping && now >= ramp_end) {  // ramp over: start counting from here
      ramping = false;
      measured_from = now;
      out->read = DirStats{};
      out->write = DirStats{};
      ::getrusage(RUSAGE_THREAD, &ru0);
    }
    for (size_t k = 0; k < n; k++) {
      IoRequest* r = done[k];
      auto slot = static_cast<unsigned>(reinterpret_cast<uintptr_t>(r->user));
      if (r->result < 0) {
        return ErrnoStatus(r->result, fmt::format("{}: {} of {} at offset {}", file,
                                                  r->op == IoRequest::Op::kRead ? "read" : "write",
                                                  o.bs, r->offset));
      }
      DirStats& d = r->op == IoRequest::Op::kRead ? out->read : out->write;
      if (!ramping) {
        d.io_bytes += static_cast<uint64_t>(r->result);
        d.ios++;
        d.clat.Add(static_cast<uint64_t>(now - issued[slot]));
      }
      free_slots.push_back(slot);
    }
  }
  ::getrusage(RUSAGE_THREAD, &ru1);
  out->start_ns = measured_from;
  out->end_ns = NowNs();
  out->runtime_ms = static_cast<double>(out->end_ns - measured_from) / 1e6;
  double secs = out->runtime_ms / 1e3;
  if (secs > 0) {
    out->usr_cpu = (CpuSeconds(ru1.ru_utime) - CpuSeconds(ru0.ru_utime)) / secs * 100;
    out->sys_cpu = (CpuSeconds(ru1.ru_stime) - CpuSeconds(ru0.ru_stime)) / secs * 100;
  }
  return Status::Ok();
}

}  // namespace

Result<IoRun> RunIoJobs(const IoJobOptions& options, const IoHooks& hooks) {
  IoJobOptions o = options;
  if (o.bs == 0 || o.iodepth == 0 || o.numjobs == 0 || o.iodepth_batch_submit == 0) {
    return Status(Code::kInvalidArgument,
                  "--bs, --iodepth, --numjobs and --iodepth_batch_submit must be positive");
  }
  if (o.numjobs > kMaxJobs || o.iodepth > kMaxIodepth || o.rwmixread > 100) {
    return Status(Code::kInvalidArgument,
                  fmt::format("--numjobs {} / --iodepth {} / --rwmixread {}: the ranges are "
                              "1..{}, 1..{} and 0..100",
                              o.numjobs, o.iodepth, o.rwmixread, kMaxJobs, kMaxIodepth));
  }
  if (o.direct && o.bs % 512 != 0) {
    return Status(Code::kInvalidArgument,
                  fmt::format("--bs {} is not a multiple of 512, which --direct=1 needs", o.bs));
  }
  auto prepared = PrepareTestFile(o);
  TestFile file = prepared.ok() ? *prepared : TestFile{};
  auto cleanup = [&] {
    if (file.created && !o.keep) ::unlink(file.path.c_str());
  };
  Status ready = prepared.status();
  if (ready.ok() && o.bs > o.size) {
    ready = Status(Code::kInvalidArgument,
                   fmt::format("--bs {} is larger than --size {}", o.bs, o.size));
  }
  if (hooks.ready) {
    Status s = hooks.ready(ready);
    if (ready.ok()) ready = s;
  }
  if (!ready.ok()) {
    cleanup();
    return ready;
  }
  std::vector<JobResult> results(o.numjobs);
  std::vector<Status> errors(o.numjobs);
  std::vector<std::thread> threads;
  DiskSampler disk(o.disk_device);  // after the test file is laid out, so its writes don't count
  Status spawn;
  std::atomic<bool> stop{false};
  std::atomic<unsigned> finished{0};
  for (unsigned j = 0; j < o.numjobs; j++) {
    results[j].name = o.name;
    try {
      threads.emplace_back([&, j] {
        errors[j] = RunOne(o, file.path, j, stop, &results[j]);
        finished.fetch_add(1, std::memory_order_release);
      });
    } catch (const std::system_error& e) {  // EAGAIN: a limit on threads or memory
      spawn = Status(Code::kIOError, fmt::format("job {} of --numjobs {}: cannot start a thread "
                                                 "({}); lower --numjobs",
                                                 j + 1, o.numjobs, e.what()));
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
  if (!o.group_reporting || o.numjobs == 1) {
    run.jobs = std::move(results);
    return run;
  }
  JobResult g = MergeJobResults(o.name, results);
  run.jobs.push_back(std::move(g));
  return run;
}

JobResult MergeJobResults(const std::string& name, std::span<const JobResult> results) {
  JobResult g;
  g.name = name;
  g.jobs = 0;
  for (const auto& r : results) {
    g.start_ns = g.jobs == 0 ? r.start_ns : std::min(g.start_ns, r.start_ns);
    g.jobs += r.jobs;
    g.runtime_ms = std::max(g.runtime_ms, r.runtime_ms);  // fio: the slowest job's runtime
    g.end_ns = std::max(g.end_ns, r.end_ns);
    for (auto [dst, src] : {std::pair{&g.read, &r.read}, std::pair{&g.write, &r.write}}) {
      dst->io_bytes += src->io_bytes;
      dst->ios += src->ios;
      dst->clat.Merge(src->clat);
    }
    g.usr_cpu += r.usr_cpu;
    g.sys_cpu += r.sys_cpu;
  }
  return g;
}

namespace {

nlohmann::json DirJson(const DirStats& d, double runtime_ms) {
  double secs = runtime_ms / 1e3;
  double bw = secs > 0 ? static_cast<double>(d.io_bytes) / secs : 0;
  return {{"io_bytes", d.io_bytes},
          {"io_kbytes", d.io_bytes / 1024},
          {"bw_bytes", static_cast<uint64_t>(bw)},
          {"bw", static_cast<uint64_t>(bw / 1024)},
          {"iops", secs > 0 ? static_cast<double>(d.ios) / secs : 0.0},
          {"runtime", static_cast<uint64_t>(runtime_ms)},
          {"total_ios", d.ios},
          {"clat_ns", LatencyJson(d.clat)}};
}

std::string DirText(const char* what, const DirStats& d, double runtime_ms) {
  if (d.ios == 0) return "";
  double secs = runtime_ms / 1e3;
  double bw = static_cast<double>(d.io_bytes) / secs;
  std::string s = fmt::format("  {}: IOPS={}, BW={}/s ({})({}/{}msec)\n", what,
                              FormatCount(static_cast<double>(d.ios) / secs),
                              FormatBytes(static_cast<uint64_t>(bw)), FormatRate(bw),
                              FormatBytes(d.io_bytes), static_cast<uint64_t>(runtime_ms));
  s += LatencyText("clat", d.clat);
  return s;
}

}  // namespace

nlohmann::json JobJson(const IoJobOptions& o, const JobResult& r) {
  return {{"jobname", r.name},
          {"groupid", 0},
          {"error", 0},
          {"job_runtime", static_cast<uint64_t>(r.runtime_ms)},
          {"job options",
           {{"rw", RwName(o.rw)},
            {"bs", std::to_string(o.bs)},
            {"iodepth", std::to_string(o.iodepth)},
            {"ioengine", o.ioengine},
            {"registerfiles", o.registerfiles ? "1" : "0"},
            {"fixedbufs", o.fixedbufs ? "1" : "0"},
            {"sqthread_poll", o.sqthread_poll ? "1" : "0"},
            {"iodepth_batch_submit", std::to_string(o.iodepth_batch_submit)},
            {"direct", o.direct ? "1" : "0"},
            {"numjobs", std::to_string(o.numjobs)}}},
          {"read", DirJson(r.read, r.runtime_ms)},
          {"write", DirJson(r.write, r.runtime_ms)},
          {"usr_cpu", r.usr_cpu},
          {"sys_cpu", r.sys_cpu}};
}

nlohmann::json JobsJson(const IoJobOptions& o, const IoRun& run) {
  nlohmann::json jobs = nlohmann::json::array();
  for (const auto& r : run.jobs) jobs.push_back(JobJson(o, r));
  nlohmann::json j = {{"fio version", std::string("dsbench-") + DSPACK_VERSION}, {"jobs", jobs}};
  if (run.disk) j["disk_util"] = nlohmann::json::array({run.disk->ToJson()});
  return j;
}

std::string JobText(const IoJobOptions& o, const JobResult& r) {
  std::string s = fmt::format(
      "{}: (groupid=0, jobs={}): err= 0: rw={}, bs={}, ioengine={}, iodepth={}, direct={}\n",
      r.name, r.jobs, RwName(o.rw), FormatBytes(o.bs), o.ioengine, o.iodepth, o.direct ? 1 : 0);
  s += DirText("read", r.read, r.runtime_ms);
  s += DirText("write", r.write, r.runtime_ms);
  s += fmt::format("  cpu          : usr={:.2f}%, sys={:.2f}%\n", r.usr_cpu, r.sys_cpu);
  return s;
}

std::string JobsText(const IoJobOptions& o, const IoRun& run) {
  std::string s;
  for (const auto& r : run.jobs) s += JobText(o, r);
  s += DiskUtilText(run.disk) + "\n";
  return s;
}

}  // namespace ds::bench
