#include "bench/meta/meta.h"

#include <fmt/format.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>

#include "bench/meta/meta_fs.h"
#include "src/fd.h"
#include "src/human.h"
#include "src/rpc_bill.h"
#include "src/stop.h"

namespace ds::bench {

std::string MetaRoot(const MetaOptions& o) {
  if (!o.root_name.empty()) return o.path + "/" + o.root_name;
  return fmt::format("{}/dsbench-meta.{}", o.path, ::getpid());
}

uint64_t MetaDirsPerThread(const MetaOptions& o) {
  return (o.files + o.files_per_dir - 1) / o.files_per_dir;
}

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kIoChunk = 1 << 20;  // the most of a file held in memory at once
constexpr unsigned kMaxThreads = 4096;
constexpr uint64_t kMaxFiles = uint64_t{1} << 40;  // files x threads; keeps the plan's sums exact

uint64_t NsSince(Clock::time_point t0) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
}

std::vector<MetaPhase> PhasesOf(const MetaOptions& o) {
  return o.phases.empty() ? std::vector<MetaPhase>(kAllMetaPhases.begin(), kAllMetaPhases.end())
                          : o.phases;
}

// Names from indices, in a fixed buffer: nothing per file is kept.
struct Name {
  char buf[32];
  Name(char prefix, uint64_t i) {
    *fmt::format_to_n(buf, sizeof buf - 1, "{}{}", prefix, i).out = '\0';
  }
};

}  // namespace

std::vector<std::string> MetaOwnedPaths(const MetaOptions& o) {
  if (!o.root_exists) return {MetaRoot(o)};
  std::vector<std::string> out;
  for (unsigned t = 0; t < o.threads; t++) {
    out.push_back(fmt::format("{}/{}", MetaRoot(o), Name('t', o.thread_base + t).buf));
  }
  return out;
}

Status CheckMetaPlan(const MetaOptions& o) {
  if (o.files == 0 || o.threads == 0 || o.files_per_dir == 0) {
    return Status(Code::kInvalidArgument,
                  "`files`, `threads` and `files_per_dir` must be positive");
  }
  if (o.threads > kMaxThreads || o.files > kMaxFiles / o.threads) {
    return Status(Code::kInvalidArgument,
                  fmt::format("`threads` {} x `files` {}: at most {} threads and 2^40 files",
                              o.threads, o.files, kMaxThreads));
  }
  std::string inside;
  DS_ASSIGN_OR_RETURN(auto fs, MetaFs::For(o.path, &inside));
  DS_RETURN_IF_ERROR(fs->CheckDir(inside));
  if (!fs->local()) return Status::Ok();  // a remote store's free space is its own business
  struct statvfs vfs;
  if (::statvfs(o.path.c_str(), &vfs) != 0) return Status::FromErrno(errno, o.path + ": statvfs");
  uint64_t block = std::max<uint64_t>(vfs.f_frsize, 512);
  uint64_t files = o.files * o.threads;
  uint64_t dirs = MetaDirsPerThread(o) * o.threads + o.threads + 1;
  // A directory entry takes well under 64 bytes in ext4, xfs and btrfs.
  uint64_t dir_bytes = ((std::min(o.files, o.files_per_dir) * 64) / block + 1) * block;
  double need = static_cast<double>(files) *
                    static_cast<double>((o.file_size + block - 1) / block) *
                    static_cast<double>(block) +
                static_cast<double>(dirs) * static_cast<double>(dir_bytes);
  uint64_t avail = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  if (need > static_cast<double>(avail)) {
    return Status(Code::kNoSpace,
                  fmt::format("{}: not enough free space for {} files of {} ({} needed, {} "
                              "free); lower `files`, `threads` or `file_size`",
                              o.path, files, FormatBytes(o.file_size),
                              FormatBytes(static_cast<uint64_t>(std::min(need, 0x1p63))),
                              FormatBytes(avail)));
  }
  // f_files == 0: the file system makes inodes as needed (btrfs, some network file systems).
  if (vfs.f_files > 0 && files + dirs > vfs.f_favail) {
    return Status(Code::kNoSpace,
                  fmt::format("{}: not enough free inodes for {} files and {} directories ({} "
                              "free); lower `files` or `threads`",
                              o.path, files, dirs, static_cast<uint64_t>(vfs.f_favail)));
  }
  return Status::Ok();
}

namespace {

// What one thread made, so that cleanup removes exactly that.
struct Worker {
  unsigned index = 0;
  std::string dir;   // ROOT/t<N>
  MetaFs::Dir tdir;  // ROOT/t<N>, open
  bool tdir_made = false;
  uint64_t dirs_made = 0;  // d0 .. d<dirs_made-1>
  uint64_t created = 0;    // f0 .. f<created-1> may exist
  uint64_t removed = 0;    // f0 .. f<removed-1> were unlinked by the remove phase
  uint64_t ops = 0;
  LatencyHistogram lat;
  Status error;
  std::string cleanup_note;  // the first thing of ours that could not be removed
};

class MetaRun;
// A barrier completion: a MetaRun member that must not throw.
struct Completion {
  MetaRun* run;
  void (MetaRun::*fn)() noexcept;
  void operator()() noexcept { (run->*fn)(); }
};
using Barrier = std::barrier<Completion>;

class MetaRun {
 public:
  // root: MetaRoot(o) inside fs (the URL's path for a remote one).
  MetaRun(const MetaOptions& o, std::unique_ptr<MetaFs> fs, std::string root)
      : o_(o),
        fs_(std::move(fs)),
        root_(std::move(root)),
        phases_(PhasesOf(o)),
        dirs_(MetaDirsPerThread(o)),
        rpc_(fs_->storage() ? RpcBillProbe::For(*fs_->storage(), root_)
                            : RpcBillProbe::For(*LocalStorage(), o.path)) {}

  Result<MetaResult> Run();

 private:
  void Thread(Worker& w, Barrier& start, Barrier& end);
  Status Setup(Worker& w);
  Status RunPhase(Worker& w, MetaPhase p);
  Status CreateOrStatOrRead(Worker& w, MetaPhase p, uint64_t k, const MetaFs::Dir& d, char* buf);
  Status Readdir(Worker& w, uint64_t m);
  Result<MetaFs::Dir> OpenDir(const Worker& w, uint64_t m) const;  // ROOT/t<N>/d<m>
  void Cleanup(Worker& w);
  bool Halted() const { return StopRequested() || failed_.load(std::memory_order_relaxed); }
  uint64_t FilesIn(uint64_t m) const {
    return std::min(o_.files_per_dir, o_.files - m * o_.files_per_dir);
  }
  std::string PathOf(const Worker& w, uint64_t m, const char* file = nullptr) const {
    std::string p = fmt::format("{}/{}", w.dir, Name('d', m).buf);
    return file ? p + "/" + file : p;
  }
  std::string UriOf(const Worker& w, uint64_t m, const char* file = nullptr) const {
    return fs_->Uri(PathOf(w, m, file));
  }
  // Barrier completions: run by the last thread to arrive, before any thread goes on.
  void PhaseStart() noexcept;
  void PhaseEnd() noexcept;
  friend struct Completion;

  const MetaOptions& o_;
  std::unique_ptr<MetaFs> fs_;
  std::string root_;
  std::vector<MetaPhase> phases_;
  uint64_t dirs_;
  RpcBillProbe rpc_;  // started and stopped in the barrier completions
  std::vector<std::unique_ptr<Worker>> workers_;
  std::atomic<bool> failed_{false};
  // Touched only in barrier completions, and read by the threads after the barrier.
  size_t phase_index_ = 0;
  bool halt_ = false;
  Clock::time_point start_;
  std::optional<DiskStat> disk_start_;
  std::array<MetaPhaseResult, kMetaPhaseCount> results_;
  Status hook_error_;  // the job's agreement stopped the run (another rank failed)
};

std::optional<DiskStat> SampleDisk(const std::string& device) noexcept {
  if (device.empty()) return std::nullopt;
  try {
    auto s = ReadDiskStat(device);
    if (s.ok()) return std::move(*s);
  } catch (...) {  // bad_alloc in a barrier completion: go without disk stats
  }
  return std::nullopt;
}

void MetaRun::PhaseStart() noexcept {
  halt_ = StopRequested() || failed_.load();
  if (o_.job) {
    Status so_far;
    for (auto& w : workers_) {
      if (!w->error.ok()) so_far = w->error;
    }
    if (so_far.ok() && StopRequested()) so_far = Status(Code::kIOError, "interrupted");
    try {
      Status s = o_.job->Agree(
          so_far, fmt::format("the start of the {} phase", MetaPhaseName(phases_[phase_index_])));
      if (!s.ok()) {
        if (so_far.ok()) hook_error_ = s;
        halt_ = true;
      }
    } catch (...) {  // bad_alloc in a barrier completion: stop the run
      hook_error_ = Status(Code::kIOError, "out of memory at the start of a phase");
      halt_ = true;
    }
  }
  if (halt_) return;
  for (auto& w : workers_) {
    w->ops = 0;
    w->lat = LatencyHistogram();
  }
  disk_start_ = SampleDisk(o_.disk_device);
  try {
    rpc_.Start();
  } catch (...) {  // bad_alloc in a barrier completion: go without the bill
  }
  start_ = Clock::now();
}

void MetaRun::PhaseEnd() noexcept {
  MetaPhaseResult& r = results_[phase_index_];
  r.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  r.phase = phases_[phase_index_];
  try {
    r.rpc = rpc_.Stop();
  } catch (...) {
  }
  for (auto& w : workers_) {
    r.ops += w->ops;
    r.lat.Merge(w->lat);
  }
  if (disk_start_) {
    if (auto end = SampleDisk(o_.disk_device)) {
      try {
        r.disk = DiskDelta(*disk_start_, *end, r.seconds * 1e3);
      } catch (...) {
      }
    }
  }
  r.interrupted = StopRequested() && r.ops < o_.files * o_.threads;
  // In a job, the next phase's start decides (across ranks): stopping here would skip that
  // agreement on this rank only.
  halt_ = o_.job == nullptr && (StopRequested() || failed_.load());
  phase_index_++;
}

Status MetaRun::Setup(Worker& w) {
  w.dir = fmt::format("{}/{}", root_, Name('t', o_.thread_base + w.index).buf);
  DS_RETURN_IF_ERROR(fs_->MakeDir(w.dir));
  w.tdir_made = true;
  DS_ASSIGN_OR_RETURN(w.tdir, fs_->OpenDir(w.dir));
  for (uint64_t m = 0; m < dirs_ && !StopRequested(); m++) {
    DS_RETURN_IF_ERROR(fs_->MakeDir(PathOf(w, m)));
    w.dirs_made = m + 1;
  }
  return Status::Ok();
}

Status MetaRun::CreateOrStatOrRead(Worker& w, MetaPhase p, uint64_t k, const MetaFs::Dir& d,
                                   char* buf) {
  Name f('f', k);
  size_t chunk = static_cast<size_t>(std::min<uint64_t>(kIoChunk, o_.file_size));
  uint64_t got = 0;
  const char* did = "read";
  if (p == MetaPhase::kStat) {
    DS_ASSIGN_OR_RETURN(got, fs_->StatSize(d, f.buf));
    did = "has";
  } else if (p == MetaPhase::kCreate) {
    w.created = k + 1;  // it may exist from here on, whatever the call says
    DS_RETURN_IF_ERROR(fs_->Create(d, f.buf, buf, std::max<size_t>(chunk, 1), o_.file_size));
    return Status::Ok();
  } else {
    DS_ASSIGN_OR_RETURN(got, fs_->Read(d, f.buf, buf, std::max<size_t>(chunk, 1), o_.file_size));
  }
  if (got != o_.file_size) {
    return Status(Code::kIOError,
                  fmt::format("{}: {} {} bytes, expected {}", UriOf(w, k / o_.files_per_dir, f.buf),
                              did, got, o_.file_size));
  }
  return Status::Ok();
}

Result<MetaFs::Dir> MetaRun::OpenDir(const Worker& w, uint64_t m) const {
  return fs_->OpenDir(PathOf(w, m));
}

Status MetaRun::Readdir(Worker& w, uint64_t m) {
  DS_ASSIGN_OR_RETURN(MetaFs::Dir d, OpenDir(w, m));
  DS_ASSIGN_OR_RETURN(uint64_t entries, fs_->CountEntries(d));
  w.ops += entries;
  if (entries != FilesIn(m)) {
    return Status(Code::kIOError, fmt::format("{}: readdir listed {} entries, expected {}",
                                              UriOf(w, m), entries, FilesIn(m)));
  }
  return Status::Ok();
}

Status MetaRun::RunPhase(Worker& w, MetaPhase p) {
  if (p == MetaPhase::kReaddir) {
    for (uint64_t m = 0; m < dirs_ && !Halted(); m++) {
      auto t0 = Clock::now();
      DS_RETURN_IF_ERROR(Readdir(w, m));
      w.lat.Add(NsSince(t0));
    }
    return Status::Ok();
  }
  std::unique_ptr<char[]> buf;
  if (p == MetaPhase::kCreate || p == MetaPhase::kRead) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(kIoChunk, o_.file_size));
    buf = std::make_unique<char[]>(n);
    std::memset(buf.get(), 'm', n);
  }
  MetaFs::Dir dir;
  for (uint64_t k = 0; k < o_.files && !Halted(); k++) {
    uint64_t m = k / o_.files_per_dir;
    if (k % o_.files_per_dir == 0) {
      DS_ASSIGN_OR_RETURN(dir, OpenDir(w, m));
    }
    auto t0 = Clock::now();
    if (p == MetaPhase::kRemove) {
      DS_RETURN_IF_ERROR(fs_->Unlink(dir, Name('f', k).buf));
      w.removed = k + 1;
    } else {
      DS_RETURN_IF_ERROR(CreateOrStatOrRead(w, p, k, dir, buf.get()));
    }
    w.lat.Add(NsSince(t0));
    w.ops++;
    if (p == MetaPhase::kRemove && (k + 1) % o_.files_per_dir == 0) {
      DS_RETURN_IF_ERROR(fs_->RemoveDir(PathOf(w, m)));
    }
  }
  if (p == MetaPhase::kRemove && !Halted() && o_.files % o_.files_per_dir != 0) {
    DS_RETURN_IF_ERROR(fs_->RemoveDir(PathOf(w, dirs_ - 1)));
  }
  return Status::Ok();
}

// Removes what this worker made and the remove phase did not: by name, ENOENT is fine.
void MetaRun::Cleanup(Worker& w) {
  auto note = [&](const Status& s) {
    if (!s.ok() && s.err() != ENOENT && w.cleanup_note.empty()) w.cleanup_note = s.message();
  };
  if (w.tdir_made) {
    std::optional<MetaFs::Dir> dir;
    for (uint64_t k = w.removed; k < w.created; k++) {
      uint64_t m = k / o_.files_per_dir;
      if (k == w.removed || k % o_.files_per_dir == 0) {
        auto d = OpenDir(w, m);
        dir = d.ok() ? std::optional<MetaFs::Dir>(std::move(*d)) : std::nullopt;
      }
      if (dir) note(fs_->Unlink(*dir, Name('f', k).buf));
    }
    for (uint64_t m = 0; m < w.dirs_made; m++) note(fs_->RemoveDir(PathOf(w, m)));
    w.tdir = MetaFs::Dir();  // closed before its directory goes
    note(fs_->RemoveDir(w.dir));
  }
}

// Every thread arrives at both barriers of a phase, or breaks out of the loop together with the
// others: halt_ is decided in a completion, before any thread reads it.
void MetaRun::Thread(Worker& w, Barrier& start, Barrier& end) {
  Status setup = Setup(w);
  if (!setup.ok()) {
    w.error = setup;
    failed_.store(true);
  }
  for (size_t i = 0; i < phases_.size(); i++) {
    start.arrive_and_wait();
    if (halt_) break;
    Status s = RunPhase(w, phases_[i]);
    if (!s.ok()) {
      w.error = s;
      failed_.store(true);
    }
    end.arrive_and_wait();
    if (halt_) break;
  }
  if (!o_.keep) Cleanup(w);
}

Result<MetaResult> MetaRun::Run() {
  if (!o_.root_exists) {
    if (Status s = fs_->MakeDir(root_); !s.ok()) {
      if (s.err() == EEXIST) {
        return Status(Code::kAlreadyExists,
                      fs_->Uri(root_) + ": exists (left by an earlier run?); remove it");
      }
      return s;
    }
  }
  for (unsigned t = 0; t < o_.threads; t++) {
    workers_.push_back(std::make_unique<Worker>());
    workers_.back()->index = t;
  }
  Barrier start(o_.threads, Completion{this, &MetaRun::PhaseStart});
  Barrier end(o_.threads, Completion{this, &MetaRun::PhaseEnd});
  std::vector<std::thread> threads;
  for (auto& w : workers_) {
    threads.emplace_back([this, &w, &start, &end] { Thread(*w, start, end); });
  }
  for (auto& t : threads) t.join();

  MetaResult r;
  r.root = root_;
  r.dirs_per_thread = dirs_;
  r.kept = o_.keep;
  for (auto& w : workers_) {
    if (!w->cleanup_note.empty() && r.cleanup_note.empty()) r.cleanup_note = w->cleanup_note;
  }
  if (!o_.keep && !o_.root_exists) {
    if (Status s = fs_->RemoveDir(root_); !s.ok() && r.cleanup_note.empty()) {
      r.cleanup_note = s.message();
    }
  }
  for (auto& w : workers_) {
    if (!w->error.ok()) {
      std::string left = r.cleanup_note.empty() ? "" : "; cleanup: " + r.cleanup_note;
      return Status(w->error.code(), w->error.message() + left, w->error.err());
    }
  }
  if (!hook_error_.ok()) return hook_error_;
  for (size_t i = 0; i < phase_index_; i++) r.phases.push_back(std::move(results_[i]));
  r.interrupted = StopRequested();
  return r;
}

}  // namespace

Result<MetaResult> RunMeta(const MetaOptions& options) {
  DS_RETURN_IF_ERROR(CheckMetaPlan(options));
  std::string inside;
  DS_ASSIGN_OR_RETURN(auto fs, MetaFs::For(options.path, &inside));
  MetaOptions in = options;
  in.path = inside;
  MetaRun run(options, std::move(fs), MetaRoot(in));
  return run.Run();
}

}  // namespace ds::bench
