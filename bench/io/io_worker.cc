#include "bench/io/io_worker.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/fs.h>
#include <pthread.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "src/stop.h"
#include "src/aligned_buffer.h"
#include "src/fd.h"
#include "src/io_engine.h"
#include "src/page_cache.h"
#include "src/random.h"
#include "src/system_probe.h"

namespace ds::bench {

namespace {

using Clock = std::chrono::steady_clock;
int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}
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

// The clone's files (fio's nrfiles): each with its fd, its own offsets and what it was written.
struct CloneFile {
  std::string path;
  OwnedFd fd;
  IoPattern pattern;
  WrittenBlocks written;
  uint64_t issued = 0;  // bytes issued to it
};

Result<OwnedFd> OpenTestFile(const IoJobOptions& o, const std::string& file) {
  int flags = (Writes(o.rw) || Trims(o.rw) ? O_RDWR : O_RDONLY) | (o.direct ? O_DIRECT : 0);
  auto fd = OpenFile(file, flags);
  if (fd.ok() && Trims(o.rw)) {
    struct stat st;
    if (::fstat(fd->get(), &st) != 0 || !S_ISBLK(st.st_mode)) {
      return Status(Code::kInvalidArgument,
                    fmt::format("{}: not a block device; rw={} discards blocks with BLKDISCARD, "
                                "which only a block device takes (fio's trim fails here too); "
                                "give `filename=/dev/...` with `allow_device`",
                                file, RwName(o.rw)));
    }
  }
  if (fd.ok() || !o.direct || fd.status().err() != EINVAL) return fd;
  struct statfs sf;
  std::string fs =
      ::statfs(file.c_str(), &sf) == 0 ? FsTypeName(static_cast<uint64_t>(sf.f_type)) : "?";
  return Status(
      Code::kInvalidArgument,
      fmt::format("{}: this file system ({}) refuses O_DIRECT; use `direct=0`", file, fs));
}

// fio's file_service_type: which file each IO goes to. roundrobin:N and random:N move on after
// N IOs; sequential stays on a file until a pass over it is issued.
class FilePicker {
 public:
  FilePicker(const IoJobOptions& o, size_t files, uint64_t pass) : o_(o), n_(files), pass_(pass) {}
  size_t Next(Rng& rng, const std::vector<CloneFile>& files) {
    if (n_ == 1) return 0;
    switch (o_.file_service) {
      case FileService::kRoundRobin:
        if (ios_++ % o_.file_service_n == 0 && ios_ > 1) cur_ = (cur_ + 1) % n_;
        break;
      case FileService::kRandom:
        if (ios_++ % o_.file_service_n == 0) cur_ = rng.Below(n_);
        break;
      case FileService::kSequential:
        if (files[cur_].issued >= pass_ * (laps_ + 1)) {
          if (++cur_ == n_) {
            cur_ = 0;
            laps_++;
          }
        }
        break;
    }
    return cur_;
  }

 private:
  const IoJobOptions& o_;
  size_t n_;
  uint64_t pass_;
  size_t cur_ = 0;
  uint64_t ios_ = 0, laps_ = 0;
};

}  // namespace

Status RunClone(const IoJobOptions& o, std::span<const std::string> paths, unsigned job,
                const std::atomic<bool>& stop, LiveCounters* live, JobResult* out) {
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
  eo.iopoll = o.hipri;
  DS_ASSIGN_OR_RETURN(auto engine, MakeEngine(o.ioengine, eo));
  const BlockSizes sizes = o.IoSizes();
  const bool verify = o.verify != VerifyKind::kNone;
  std::vector<CloneFile> files;
  std::vector<int> fds;
  for (const auto& p : paths) {
    DS_ASSIGN_OR_RETURN(OwnedFd fd, OpenTestFile(o, p));
    if (o.invalidate) EvictPages(fd.get());
    fds.push_back(fd.get());
    files.push_back({p, std::move(fd), IoPattern(sizes, o.distribution, o.size, IsRandom(o.rw)),
                     verify ? WrittenBlocks(o.size, o.bs) : WrittenBlocks()});
  }
  std::vector<EngineFile> engine_files;  // after files: handed back before the fds close
  for (int fd : fds) {
    DS_ASSIGN_OR_RETURN(EngineFile f, EngineFile::Open(*engine, fd));
    engine_files.push_back(std::move(f));
  }
  unsigned depth = o.iodepth;
  std::vector<AlignedBuffer> bufs;
  for (unsigned i = 0; i < depth; i++) {
    bufs.emplace_back(sizes.max);
    Rng(o.seed, job * 1000 + i).Fill(bufs.back().data(), sizes.max);
  }
  if (o.registerfiles || o.sqthread_poll) {  // as fio: SQPOLL implies registered files
    DS_RETURN_IF_ERROR(engine->RegisterFiles(fds));
  }
  if (o.fixedbufs) {
    std::vector<std::span<char>> spans;
    for (auto& b : bufs) spans.emplace_back(b.data(), b.size());
    DS_RETURN_IF_ERROR(engine->RegisterBuffers(spans));
  }
  std::vector<IoRequest> reqs(depth);
  std::vector<int64_t> issued(depth);
  std::vector<size_t> slot_file(depth, 0);
  std::vector<IoRequest*> done(depth);
  const uint64_t seed = o.randrepeat ? o.seed : o.seed ^ static_cast<uint64_t>(NowNs());
  Rng rng(seed, job + 1);
  // fio's io_size, else size x loops over each file (a pass: whole blocks of bs).
  const uint64_t pass = sizes.fixed() ? o.size / o.bs * o.bs : o.size;
  const uint64_t limit = o.io_size ? o.io_size : pass * files.size() * o.loops;
  FilePicker picker(o, files.size(), pass);
  uint64_t issued_bytes = 0, issued_ios = 0, writes_issued = 0;
  bool last_write = false;
  size_t last_file = 0;
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
  uint64_t window_bytes[3] = {0, 0, 0}, window_ios[3] = {0, 0, 0};
  auto close_window = [&](int64_t now) {
    double secs = static_cast<double>(now - window_start) / 1e9;
    DirStats* dirs[3] = {&out->read, &out->write, &out->trim};
    bool does[3] = {Reads(o.rw), Writes(o.rw), Trims(o.rw)};
    for (int d = 0; d < 3; d++) {
      if (!does[d]) continue;
      dirs[d]->bw_kib.Add(static_cast<double>(window_bytes[d]) / 1024 / secs);
      dirs[d]->iops.Add(static_cast<double>(window_ios[d]) / secs);
      window_bytes[d] = window_ios[d] = 0;
    }
    window_start = now;
  };
  // fio's sync block counts the fsyncs of fsync=N; end_fsync's is not an IO of the job.
  auto do_fsync = [&](const CloneFile& f, bool count) -> Status {
    int64_t t0 = NowNs();
    if (::fsync(f.fd.get()) != 0) return Status::FromErrno(errno, f.path + ": fsync");
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
          if (engine->inflight() > 0) break;                    // reap meanwhile
          if (!SleepUntil(std::min(t, deadline), stop)) break;  // the runtime ends a wait too
          now = NowNs();
          continue;
        }
      }
      // fio's fsync=N: after every N writes issued, an fsync before the next IO (none after the
      // job's last write).
      if (o.fsync_every && last_write && writes_issued % o.fsync_every == 0) {
        DS_RETURN_IF_ERROR(do_fsync(files[last_file], true));
        last_write = false;
      }
      unsigned slot = free_slots.back();
      free_slots.pop_back();
      IoRequest& r = reqs[slot];
      bool write =
          o.rw == RwMode::kWrite || o.rw == RwMode::kRandWrite ||
          ((o.rw == RwMode::kRandRw || o.rw == RwMode::kRw) && rng.Below(100) >= o.rwmixread);
      const size_t fi = picker.Next(rng, files);
      CloneFile& f = files[fi];
      const IoPattern::Io io = f.pattern.Next(rng);
      if (Trims(o.rw)) {  // synchronous, in this thread (fio's engines trim so too)
        free_slots.push_back(slot);
        uint64_t range[2] = {o.offset + io.offset, io.len};
        int64_t t0 = NowNs();
        if (::ioctl(f.fd.get(), BLKDISCARD, range) != 0) {
          return Status::FromErrno(
              errno, fmt::format("{}: trim of {} at offset {}", f.path, io.len, range[0]));
        }
        now = NowNs();
        issued_bytes += io.len;
        f.issued += io.len;
        issued_ios++;
        out->depth.level[LevelBucket(1)]++;
        out->depth.submit[CountBucket(1)]++;
        out->depth.complete[CountBucket(1)]++;
        if (live) {
          live->bytes.fetch_add(io.len, std::memory_order_relaxed);
          live->ios.fetch_add(1, std::memory_order_relaxed);
        }
        if (ramping && now >= ramp_end) {
          ramping = false;
          measured_from = window_start = now;
          out->trim = DirStats{};
          out->depth = DepthStats{};
          ::getrusage(RUSAGE_THREAD, &ru0);
        } else if (!ramping) {
          out->trim.io_bytes += io.len;
          out->trim.ios++;
          if (!o.gtod_reduce) out->trim.clat.Add(static_cast<uint64_t>(now - t0));
          window_bytes[2] += io.len;
          window_ios[2]++;
          if (logs) {
            logs->Complete(static_cast<uint64_t>(now - thread_start) / 1000000, 2, io.len,
                           static_cast<uint64_t>(now - t0));
          }
          if (!o.gtod_reduce && now - window_start >= kWindowNs) close_window(now);
        }
        continue;
      }
      r = IoRequest{write ? IoRequest::Op::kWrite : IoRequest::Op::kRead,
                    f.fd.get(),
                    bufs[slot].data(),
                    io.len,
                    o.offset + io.offset,
                    0,
                    reinterpret_cast<void*>(static_cast<uintptr_t>(slot)),
                    o.fixedbufs ? static_cast<int>(slot) : -1};
      if (verify && write) {
        FillVerifiable(o.verify, o.seed, r.offset, static_cast<char*>(r.buf), r.len);
        f.written.Mark(io.offset);
      }
      slot_file[slot] = fi;
      if (sync_engine) issued[slot] = NowNs();
      DS_RETURN_IF_ERROR(engine->Queue(&r));
      out->depth.level[LevelBucket(engine->inflight())]++;
      if (sync_engine) out->depth.submit[CountBucket(1)]++;
      if (!sync_engine) unsubmitted.push_back(slot);
      issued_bytes += io.len;
      f.issued += io.len;
      issued_ios++;
      last_write = write;
      last_file = fi;
      writes_issued += write ? 1 : 0;
      // fio's iodepth_batch_submit: hand requests to the kernel in groups of this many.
      if (++queued >= o.iodepth_batch_submit) DS_RETURN_IF_ERROR(submit());
    }
    if (engine->inflight() == 0) {
      if (more(NowNs()) && (o.rate || o.rate_iops)) {  // paced: wait for the next slot
        if (!SleepUntil(std::min(next_allowed(), deadline), stop)) break;
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
      out->trim = DirStats{};
      out->depth = DepthStats{};
      for (int d = 0; d < 3; d++) window_bytes[d] = window_ios[d] = 0;
      ::getrusage(RUSAGE_THREAD, &ru0);
    }
    uint64_t landed = 0;
    for (size_t k = 0; k < n; k++) {
      IoRequest* r = done[k];
      auto slot = static_cast<unsigned>(reinterpret_cast<uintptr_t>(r->user));
      if (r->result < 0) {
        std::string what =
            fmt::format("{}: {} of {} at offset {}", files[slot_file[slot]].path,
                        r->op == IoRequest::Op::kRead ? "read" : "write", r->len, r->offset);
        if (o.hipri && (r->result == -EOPNOTSUPP || r->result == -EINVAL)) {
          what +=
              " (hipri: this device or file system cannot poll for completions; it needs "
              "direct=1 and a block device with poll queues, e.g. nvme poll_queues=N)";
        }
        return ErrnoStatus(r->result, what);
      }
      const bool read = r->op == IoRequest::Op::kRead;
      landed += static_cast<uint64_t>(r->result);
      DirStats& d = read ? out->read : out->write;
      if (!ramping) {
        d.io_bytes += static_cast<uint64_t>(r->result);
        d.ios++;
        if (static_cast<size_t>(r->result) < r->len) d.short_ios++;
        if (!o.gtod_reduce) d.clat.Add(static_cast<uint64_t>(now - issued[slot]));
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
    if (live) {
      live->bytes.fetch_add(landed, std::memory_order_relaxed);
      live->ios.fetch_add(n, std::memory_order_relaxed);
    }
    if (!ramping && !o.gtod_reduce && now - window_start >= kWindowNs) close_window(now);
    if (o.thinktime > 0) {
      SleepUntil(NowNs() + static_cast<int64_t>(o.thinktime * 1e9 * static_cast<double>(n)), stop);
      now = NowNs();
    }
  }
  if (o.end_fsync && Writes(o.rw)) {
    for (const auto& f : files) DS_RETURN_IF_ERROR(do_fsync(f, false));
  }
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
  if (!verify) return Status::Ok();
  // Read back from the device, not the page cache: written through it, the blocks are made
  // durable and their cached pages dropped first.
  Status checked = Status::Ok();
  for (const auto& f : files) {
    if (!o.direct) {
      if (::fsync(f.fd.get()) != 0) return Status::FromErrno(errno, f.path + ": fsync");
      EvictPages(f.fd.get());
    }
    VerifyResult vr;
    Status s =
        VerifyWritten(o.verify, f.fd.get(), o.offset, f.written, bufs[0].data(), f.path, &vr);
    out->verified_blocks += vr.blocks;
    if (checked.ok()) checked = s;
  }
  return checked;
}

}  // namespace ds::bench
