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

#include "bench/io/clone_files.h"
#include "src/aligned_buffer.h"
#include "src/fd.h"
#include "src/io_engine.h"
#include "src/page_cache.h"
#include "src/random.h"
#include "src/stop.h"
#include "src/storage.h"
#include "src/system_probe.h"

namespace ds::bench {

// ---- IoClock ----

int64_t IoClock::Now() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool IoClock::SleepUntil(int64_t until, const std::atomic<bool>& stop) const {
  while (Now() < until) {
    if (StopRequested() || stop.load(std::memory_order_relaxed)) return false;
    int64_t left = until - Now();
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(left, 10'000'000)));
  }
  return true;
}

const IoClock& SteadyIoClock() {
  static const IoClock clock;
  return clock;
}

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

// One clone's run, in its steps: Setup (affinity, start delay, logs, engine, files, buffers),
// Loop (issue up to iodepth, paced; reap; think), Finish (end_fsync, CPU, timings, verify).
// Every completion, a trim's too, is counted by Account; the ramp ends in one place, EndRamp.
class Clone {
 public:
  Clone(const IoJobOptions& o, unsigned job, const std::atomic<bool>& stop, LiveCounters* live,
        JobResult* out, const IoClock& clock)
      : o_(o), job_(job), stop_(stop), live_(live), out_(out), clock_(clock) {}

  Status Run(std::span<const std::string> paths) {
    thread_start_ = clock_.Now();
    bool go = true;
    DS_RETURN_IF_ERROR(Setup(paths, &go));
    if (!go) return Status::Ok();  // stopped during the start delay
    DS_RETURN_IF_ERROR(Loop());
    return Finish();
  }

 private:
  static constexpr int64_t kWindowNs = 500'000'000;  // fio's bw/iops sample window
  enum Dir { kRead = 0, kWrite = 1, kTrim = 2 };

  Status Setup(std::span<const std::string> paths, bool* go) {
    if (!o_.cpus.empty()) {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (int c : o_.cpus) CPU_SET(c, &set);
      if (int e = pthread_setaffinity_np(pthread_self(), sizeof set, &set); e != 0) {
        return Status::FromErrno(e, fmt::format("cpus_allowed: cannot run job {} there", job_),
                                 Code::kInvalidArgument);
      }
    }
    if (o_.startdelay > 0 &&
        !clock_.SleepUntil(thread_start_ + static_cast<int64_t>(o_.startdelay * 1e9), stop_)) {
      *go = false;
      return Status::Ok();
    }
    if (o_.logs.any()) {
      DS_ASSIGN_OR_RETURN(logs_, IoLogs::Open(o_.logs, job_));
    }
    EngineOptions eo;
    eo.depth = o_.iodepth;
    eo.sqpoll = o_.sqthread_poll;
    eo.iopoll = o_.hipri;
    std::shared_ptr<Storage> storage;
    if (o_.ioengine == "nfs") {  // the engine of the URL's storage: a connection of its own
      DS_ASSIGN_OR_RETURN(StorageRef at, OpenStorage(o_.nfs_url));
      DS_ASSIGN_OR_RETURN(engine_, at.storage->NewEngine(eo));
      storage = at.storage;
    } else {
      DS_ASSIGN_OR_RETURN(engine_, MakeEngine(o_.ioengine, eo));
    }
    sync_engine_ = (engine_->flags() & kEngineSync) != 0;
    const bool remote = (engine_->flags() & kEngineRemote) != 0;
    sizes_ = o_.IoSizes();
    verify_ = o_.verify != VerifyKind::kNone;
    std::vector<int> fds;
    for (const auto& p : paths) {
      OwnedFd fd;
      int io_fd = -1;
      if (remote) {  // no local fd or page cache: the engine opens the file by its path
        DS_ASSIGN_OR_RETURN(io_fd, engine_->OpenPath(p, Writes(o_.rw)));
        engine_files_.push_back(EngineFile::Adopt(*engine_, io_fd));
      } else {
        DS_ASSIGN_OR_RETURN(fd, OpenTestFile(o_, p));
        if (o_.invalidate) EvictPages(fd.get());
        io_fd = fd.get();
        fds.push_back(io_fd);
      }
      files_.push_back({storage ? storage->Uri(p) : p, std::move(fd),
                        IoPattern(sizes_, o_.distribution, o_.size, IsRandom(o_.rw)),
                        verify_ ? WrittenBlocks(o_.size, o_.bs) : WrittenBlocks()});
      files_.back().io_fd = io_fd;
    }
    for (int fd : fds) {
      DS_ASSIGN_OR_RETURN(EngineFile f, EngineFile::Open(*engine_, fd));
      engine_files_.push_back(std::move(f));
    }
    const unsigned depth = o_.iodepth;
    for (unsigned i = 0; i < depth; i++) {
      bufs_.emplace_back(sizes_.max);
      Rng(o_.seed, job_ * 1000 + i).Fill(bufs_.back().data(), sizes_.max);
    }
    if (o_.registerfiles || o_.sqthread_poll) {  // as fio: SQPOLL implies registered files
      DS_RETURN_IF_ERROR(engine_->RegisterFiles(fds));
    }
    if (o_.fixedbufs) {
      std::vector<std::span<char>> spans;
      for (auto& b : bufs_) spans.emplace_back(b.data(), b.size());
      DS_RETURN_IF_ERROR(engine_->RegisterBuffers(spans));
    }
    reqs_.resize(depth);
    issued_.resize(depth);
    slot_file_.assign(depth, 0);
    done_.resize(depth);
    for (unsigned i = 0; i < depth; i++) free_slots_.push_back(depth - 1 - i);
    const uint64_t seed = o_.randrepeat ? o_.seed : o_.seed ^ static_cast<uint64_t>(clock_.Now());
    rng_ = Rng(seed, job_ + 1);
    // fio's io_size, else size x loops over each file (a pass: whole blocks of bs).
    pass_ = sizes_.fixed() ? o_.size / o_.bs * o_.bs : o_.size;
    limit_ = o_.io_size ? o_.io_size : pass_ * files_.size() * o_.loops;
    picker_ = std::make_unique<FilePicker>(o_, files_.size(), pass_);
    start_ = clock_.Now();
    ramp_end_ = start_ + static_cast<int64_t>(o_.ramp_time * 1e9);
    deadline_ = o_.runtime > 0 ? ramp_end_ + static_cast<int64_t>(o_.runtime * 1e9) : INT64_MAX;
    measured_from_ = window_start_ = ramp_end_;
    ramping_ = o_.ramp_time > 0;
    ::getrusage(RUSAGE_THREAD, &ru0_);
    return Status::Ok();
  }

  bool More(int64_t now) const {
    if (StopRequested() || stop_.load(std::memory_order_relaxed) || now >= deadline_) return false;
    return o_.time_based || issued_bytes_ < limit_;
  }

  // rate / rate_iops: the earliest time the next IO may go (fio spreads IOs evenly).
  int64_t NextAllowed() const {
    int64_t t = 0;
    if (o_.rate) {
      t = start_ + static_cast<int64_t>(static_cast<double>(issued_bytes_) * 1e9 / o_.rate);
    }
    if (o_.rate_iops) {
      t = std::max(t, start_ + static_cast<int64_t>(static_cast<double>(issued_ios_) * 1e9 /
                                                    static_cast<double>(o_.rate_iops)));
    }
    return t;
  }

  // The ramp is over at `now`: what was counted so far is dropped, and counting starts here.
  void EndRamp(int64_t now) {
    ramping_ = false;
    measured_from_ = window_start_ = now;
    out_->read = DirStats{};
    out_->write = DirStats{};
    out_->trim = DirStats{};
    out_->depth = DepthStats{};
    for (int d = 0; d < 3; d++) window_bytes_[d] = window_ios_[d] = 0;
    ::getrusage(RUSAGE_THREAD, &ru0_);
  }

  // One completed IO of direction d, `bytes` landed of `len` asked, issued at `issued`.
  void Account(Dir d, uint64_t bytes, uint64_t len, int64_t issued, int64_t now) {
    if (ramping_) return;
    DirStats& s = d == kRead ? out_->read : d == kWrite ? out_->write : out_->trim;
    s.io_bytes += bytes;
    s.ios++;
    if (bytes < len) s.short_ios++;
    if (!o_.gtod_reduce) s.clat.Add(static_cast<uint64_t>(now - issued));
    window_bytes_[d] += bytes;
    window_ios_[d]++;
    if (logs_) {
      logs_->Complete(static_cast<uint64_t>(now - thread_start_) / 1000000, d, bytes,
                      static_cast<uint64_t>(now - issued));
    }
  }

  // fio's bw/iops samples: one per 500 ms window, per direction the job does.
  void MaybeCloseWindow(int64_t now) {
    if (ramping_ || o_.gtod_reduce || now - window_start_ < kWindowNs) return;
    double secs = static_cast<double>(now - window_start_) / 1e9;
    DirStats* dirs[3] = {&out_->read, &out_->write, &out_->trim};
    bool does[3] = {Reads(o_.rw), Writes(o_.rw), Trims(o_.rw)};
    for (int d = 0; d < 3; d++) {
      if (!does[d]) continue;
      dirs[d]->bw_kib.Add(static_cast<double>(window_bytes_[d]) / 1024 / secs);
      dirs[d]->iops.Add(static_cast<double>(window_ios_[d]) / secs);
      window_bytes_[d] = window_ios_[d] = 0;
    }
    window_start_ = now;
  }

  void Live(uint64_t bytes, uint64_t ios) {
    if (!live_) return;
    live_->bytes.fetch_add(bytes, std::memory_order_relaxed);
    live_->ios.fetch_add(ios, std::memory_order_relaxed);
  }

  // fio's sync block counts the fsyncs of fsync=N; end_fsync's is not an IO of the job.
  Status Fsync(const CloneFile& f, bool count) {
    int64_t t0 = clock_.Now();
    if (::fsync(f.fd.get()) != 0) return Status::FromErrno(errno, f.path + ": fsync");
    if (count && !ramping_) {
      out_->syncs++;
      out_->sync_lat.Add(static_cast<uint64_t>(clock_.Now() - t0));
    }
    return Status::Ok();
  }

  // fio's clat runs from submission to completion. A synchronous engine does the IO inside
  // Queue, so its clock starts before Queue; an asynchronous one's starts when Submit hands the
  // request to the kernel (with iodepth_batch_submit > 1, a request may wait queued first).
  Status Submit() {
    DS_ASSIGN_OR_RETURN(unsigned n, engine_->Submit());
    if (!sync_engine_ && n > 0) out_->depth.submit[CountBucket(n)]++;
    int64_t t = clock_.Now();
    for (unsigned slot : unsubmitted_) issued_[slot] = t;
    unsubmitted_.clear();
    queued_ = 0;
    return Status::Ok();
  }

  // A trim is synchronous, in this thread (fio's engines trim so too).
  Status Trim(CloneFile& f, const IoPattern::Io& io) {
    uint64_t range[2] = {o_.offset + io.offset, io.len};
    int64_t t0 = clock_.Now();
    if (::ioctl(f.fd.get(), BLKDISCARD, range) != 0) {
      return Status::FromErrno(
          errno, fmt::format("{}: trim of {} at offset {}", f.path, io.len, range[0]));
    }
    now_ = clock_.Now();
    issued_bytes_ += io.len;
    f.issued += io.len;
    issued_ios_++;
    out_->depth.level[LevelBucket(1)]++;
    out_->depth.submit[CountBucket(1)]++;
    out_->depth.complete[CountBucket(1)]++;
    Live(io.len, 1);
    if (ramping_ && now_ >= ramp_end_) {
      EndRamp(now_);
    } else {
      Account(kTrim, io.len, io.len, t0, now_);
      MaybeCloseWindow(now_);
    }
    return Status::Ok();
  }

  // Queues one IO on a free slot (or trims); false in *issued when pacing says wait.
  Status IssueOne(bool* go_on) {
    *go_on = true;
    if (o_.rate || o_.rate_iops) {
      int64_t t = NextAllowed();
      if (t > now_) {
        if (engine_->inflight() > 0) return *go_on = false, Status::Ok();  // reap meanwhile
        // The runtime ends a wait too.
        if (!clock_.SleepUntil(std::min(t, deadline_), stop_)) return *go_on = false, Status::Ok();
        now_ = clock_.Now();
        return Status::Ok();
      }
    }
    // fio's fsync=N: after every N writes issued, an fsync before the next IO (none after the
    // job's last write).
    if (o_.fsync_every && last_write_ && writes_issued_ % o_.fsync_every == 0) {
      DS_RETURN_IF_ERROR(Fsync(files_[last_file_], true));
      last_write_ = false;
    }
    const bool write =
        o_.rw == RwMode::kWrite || o_.rw == RwMode::kRandWrite ||
        ((o_.rw == RwMode::kRandRw || o_.rw == RwMode::kRw) && rng_.Below(100) >= o_.rwmixread);
    const size_t fi = picker_->Next(rng_, files_);
    CloneFile& f = files_[fi];
    const IoPattern::Io io = f.pattern.Next(rng_);
    if (Trims(o_.rw)) return Trim(f, io);
    unsigned slot = free_slots_.back();
    free_slots_.pop_back();
    IoRequest& r = reqs_[slot];
    r = IoRequest{write ? IoRequest::Op::kWrite : IoRequest::Op::kRead,
                  f.io_fd,
                  bufs_[slot].data(),
                  io.len,
                  o_.offset + io.offset,
                  0,
                  reinterpret_cast<void*>(static_cast<uintptr_t>(slot)),
                  o_.fixedbufs ? static_cast<int>(slot) : -1};
    if (verify_ && write) {
      FillVerifiable(o_.verify, o_.seed, r.offset, static_cast<char*>(r.buf), r.len);
      f.written.Mark(io.offset);
    }
    slot_file_[slot] = fi;
    if (sync_engine_) issued_[slot] = clock_.Now();
    DS_RETURN_IF_ERROR(engine_->Queue(&r));
    out_->depth.level[LevelBucket(engine_->inflight())]++;
    if (sync_engine_) out_->depth.submit[CountBucket(1)]++;
    if (!sync_engine_) unsubmitted_.push_back(slot);
    issued_bytes_ += io.len;
    f.issued += io.len;
    issued_ios_++;
    last_write_ = write;
    last_file_ = fi;
    writes_issued_ += write ? 1 : 0;
    // fio's iodepth_batch_submit: hand requests to the kernel in groups of this many.
    if (++queued_ >= o_.iodepth_batch_submit) DS_RETURN_IF_ERROR(Submit());
    return Status::Ok();
  }

  // Reaps at least one completion and counts what landed.
  Status Reap() {
    DS_RETURN_IF_ERROR(Submit());
    DS_ASSIGN_OR_RETURN(size_t n, engine_->Reap(1, done_));
    now_ = clock_.Now();
    out_->depth.complete[CountBucket(n)]++;
    if (ramping_ && now_ >= ramp_end_) EndRamp(now_);  // ramp over: count from here
    uint64_t landed = 0;
    for (size_t k = 0; k < n; k++) {
      IoRequest* r = done_[k];
      auto slot = static_cast<unsigned>(reinterpret_cast<uintptr_t>(r->user));
      if (r->result < 0) {
        std::string what =
            fmt::format("{}: {} of {} at offset {}", files_[slot_file_[slot]].path,
                        r->op == IoRequest::Op::kRead ? "read" : "write", r->len, r->offset);
        if (o_.hipri && (r->result == -EOPNOTSUPP || r->result == -EINVAL)) {
          what +=
              " (hipri: this device or file system cannot poll for completions; it needs "
              "direct=1 and a block device with poll queues, e.g. nvme poll_queues=N)";
        }
        return engine_->RequestError(*r, what);
      }
      const auto bytes = static_cast<uint64_t>(r->result);
      landed += bytes;
      Account(r->op == IoRequest::Op::kRead ? kRead : kWrite, bytes, r->len, issued_[slot], now_);
      free_slots_.push_back(slot);
    }
    Live(landed, n);
    MaybeCloseWindow(now_);
    if (o_.thinktime > 0) {
      clock_.SleepUntil(
          clock_.Now() + static_cast<int64_t>(o_.thinktime * 1e9 * static_cast<double>(n)), stop_);
      now_ = clock_.Now();
    }
    return Status::Ok();
  }

  Status Loop() {
    now_ = start_;
    while (true) {
      while (!free_slots_.empty() && More(now_)) {
        bool go_on = true;
        DS_RETURN_IF_ERROR(IssueOne(&go_on));
        if (!go_on) break;
      }
      if (engine_->inflight() == 0) {
        if (More(clock_.Now()) && (o_.rate || o_.rate_iops)) {  // paced: wait for the next slot
          if (!clock_.SleepUntil(std::min(NextAllowed(), deadline_), stop_)) break;
          now_ = clock_.Now();
          continue;
        }
        break;
      }
      DS_RETURN_IF_ERROR(Reap());
    }
    return Status::Ok();
  }

  Status Finish() {
    if (o_.end_fsync && Writes(o_.rw)) {
      for (const auto& f : files_) DS_RETURN_IF_ERROR(Fsync(f, false));
    }
    rusage ru1{};
    ::getrusage(RUSAGE_THREAD, &ru1);
    if (logs_) {
      logs_->Tick(static_cast<uint64_t>(clock_.Now() - thread_start_) / 1000000, true);
      DS_RETURN_IF_ERROR(logs_->Close());
    }
    out_->start_ns = measured_from_;
    out_->end_ns = clock_.Now();
    out_->runtime_ms = static_cast<double>(out_->end_ns - measured_from_) / 1e6;
    out_->elapsed = static_cast<double>(out_->end_ns - thread_start_) / 1e9;
    double secs = out_->runtime_ms / 1e3;
    if (secs > 0) {
      out_->usr_cpu = (CpuSeconds(ru1.ru_utime) - CpuSeconds(ru0_.ru_utime)) / secs * 100;
      out_->sys_cpu = (CpuSeconds(ru1.ru_stime) - CpuSeconds(ru0_.ru_stime)) / secs * 100;
    }
    out_->ctx =
        static_cast<uint64_t>((ru1.ru_nvcsw - ru0_.ru_nvcsw) + (ru1.ru_nivcsw - ru0_.ru_nivcsw));
    out_->majf = static_cast<uint64_t>(ru1.ru_majflt - ru0_.ru_majflt);
    out_->engine_ios = engine_->counters().reaped;
    out_->minf = static_cast<uint64_t>(ru1.ru_minflt - ru0_.ru_minflt);
    if (!verify_) return Status::Ok();
    // Read back from the device, not the page cache: written through it, the blocks are made
    // durable and their cached pages dropped first.
    Status checked = Status::Ok();
    for (const auto& f : files_) {
      if (!o_.direct) {
        if (::fsync(f.fd.get()) != 0) return Status::FromErrno(errno, f.path + ": fsync");
        EvictPages(f.fd.get());
      }
      VerifyResult vr;
      Status s =
          VerifyWritten(o_.verify, f.fd.get(), o_.offset, f.written, bufs_[0].data(), f.path, &vr);
      out_->verified_blocks += vr.blocks;
      if (checked.ok()) checked = s;
    }
    return checked;
  }

  const IoJobOptions& o_;
  const unsigned job_;
  const std::atomic<bool>& stop_;
  LiveCounters* live_;
  JobResult* out_;
  const IoClock& clock_;

  std::unique_ptr<IoLogs> logs_;
  // Before the engine: a run that fails with requests in flight closes its files and drops the
  // engine while they may still complete into these.
  std::vector<AlignedBuffer> bufs_;
  std::vector<IoRequest> reqs_;
  std::unique_ptr<IoEngine> engine_;
  bool sync_engine_ = false;
  BlockSizes sizes_;
  bool verify_ = false;
  std::vector<CloneFile> files_;
  std::vector<EngineFile> engine_files_;  // after files_: handed back before the fds close
  std::vector<int64_t> issued_;
  std::vector<size_t> slot_file_;
  std::vector<IoRequest*> done_;
  std::vector<unsigned> free_slots_, unsubmitted_;
  unsigned queued_ = 0;  // queued since the last Submit
  Rng rng_{0, 0};
  uint64_t pass_ = 0, limit_ = 0;
  std::unique_ptr<FilePicker> picker_;
  uint64_t issued_bytes_ = 0, issued_ios_ = 0, writes_issued_ = 0;
  bool last_write_ = false;
  size_t last_file_ = 0;
  int64_t thread_start_ = 0, start_ = 0, ramp_end_ = 0, deadline_ = 0, measured_from_ = 0;
  int64_t window_start_ = 0, now_ = 0;
  bool ramping_ = false;
  uint64_t window_bytes_[3] = {0, 0, 0}, window_ios_[3] = {0, 0, 0};
  rusage ru0_{};
};

}  // namespace

Status RunClone(const IoJobOptions& o, std::span<const std::string> paths, unsigned job,
                const std::atomic<bool>& stop, LiveCounters* live, JobResult* out,
                const IoClock& clock) {
  return Clone(o, job, stop, live, out, clock).Run(paths);
}

}  // namespace ds::bench
