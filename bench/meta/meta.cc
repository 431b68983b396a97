#include "bench/meta/meta.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>

#include "src/fd.h"
#include "src/human.h"
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

// A system call, again while a signal (a stop request) interrupts it; the loops check the stop.
template <typename F>
auto NoIntr(F f) {
  decltype(f()) r;
  do {
    r = f();
  } while (r < 0 && errno == EINTR);
  return r;
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
  struct stat st;
  if (::stat(o.path.c_str(), &st) != 0) {
    return Status::FromErrno(errno, o.path + ": give an existing directory",
                             Code::kInvalidArgument);
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status(Code::kInvalidArgument,
                  o.path + ": not a directory; dsbench meta makes its files in a directory");
  }
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
  std::string dir;  // ROOT/t<N>
  OwnedFd tfd;      // ROOT/t<N>
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
  MetaRun(const MetaOptions& o, std::string root)
      : o_(o), root_(std::move(root)), phases_(PhasesOf(o)), dirs_(MetaDirsPerThread(o)) {}

  Result<MetaResult> Run();

 private:
  void Thread(Worker& w, Barrier& start, Barrier& end);
  Status Setup(Worker& w);
  Status RunPhase(Worker& w, MetaPhase p);
  Status CreateOrStatOrRead(Worker& w, MetaPhase p, uint64_t k, int dfd, char* buf);
  Status Readdir(Worker& w, uint64_t m);
  Result<OwnedFd> OpenDir(const Worker& w, uint64_t m) const;  // ROOT/t<N>/d<m>
  void Cleanup(Worker& w);
  bool Halted() const { return StopRequested() || failed_.load(std::memory_order_relaxed); }
  uint64_t FilesIn(uint64_t m) const {
    return std::min(o_.files_per_dir, o_.files - m * o_.files_per_dir);
  }
  std::string PathOf(const Worker& w, uint64_t m, const char* file = nullptr) const {
    std::string p = fmt::format("{}/{}", w.dir, Name('d', m).buf);
    return file ? p + "/" + file : p;
  }
  // Barrier completions: run by the last thread to arrive, before any thread goes on.
  void PhaseStart() noexcept;
  void PhaseEnd() noexcept;
  friend struct Completion;

  const MetaOptions& o_;
  std::string root_;
  std::vector<MetaPhase> phases_;
  uint64_t dirs_;
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
  start_ = Clock::now();
}

void MetaRun::PhaseEnd() noexcept {
  MetaPhaseResult& r = results_[phase_index_];
  r.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  r.phase = phases_[phase_index_];
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
  if (::mkdir(w.dir.c_str(), 0755) != 0) return Status::FromErrno(errno, w.dir + ": mkdir");
  w.tdir_made = true;
  DS_ASSIGN_OR_RETURN(w.tfd, OpenFile(w.dir, O_RDONLY | O_DIRECTORY));
  for (uint64_t m = 0; m < dirs_ && !StopRequested(); m++) {
    if (::mkdirat(w.tfd.get(), Name('d', m).buf, 0755) != 0) {
      return Status::FromErrno(errno, PathOf(w, m) + ": mkdir");
    }
    w.dirs_made = m + 1;
  }
  return Status::Ok();
}

Status MetaRun::CreateOrStatOrRead(Worker& w, MetaPhase p, uint64_t k, int dfd, char* buf) {
  Name f('f', k);
  auto fail = [&](const char* what) {
    return Status::FromErrno(errno, PathOf(w, k / o_.files_per_dir, f.buf) + ": " + what);
  };
  if (p == MetaPhase::kStat) {
    struct stat st;
    if (NoIntr([&] { return ::fstatat(dfd, f.buf, &st, 0); }) != 0) return fail("stat");
    if (static_cast<uint64_t>(st.st_size) != o_.file_size) {
      return Status(Code::kIOError,
                    fmt::format("{}: {} bytes, expected {}", PathOf(w, k / o_.files_per_dir, f.buf),
                                st.st_size, o_.file_size));
    }
    return Status::Ok();
  }
  bool create = p == MetaPhase::kCreate;
  int fd = NoIntr([&] {
    return create ? ::openat(dfd, f.buf, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)
                  : ::openat(dfd, f.buf, O_RDONLY | O_CLOEXEC);
  });
  if (fd < 0) return fail(create ? "create" : "open");
  if (create) w.created = k + 1;
  OwnedFd owned(fd);
  uint64_t done = 0;
  while (done < o_.file_size) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(kIoChunk, o_.file_size - done));
    ssize_t got = NoIntr([&] { return create ? ::write(fd, buf, n) : ::read(fd, buf, n); });
    if (got < 0) return fail(create ? "write" : "read");
    if (got == 0) break;  // EOF (a write of n > 0 bytes does not return 0)
    done += static_cast<uint64_t>(got);
  }
  if (done != o_.file_size) {
    return Status(Code::kIOError, fmt::format("{}: {} {} bytes, expected {}",
                                              PathOf(w, k / o_.files_per_dir, f.buf),
                                              create ? "wrote" : "read", done, o_.file_size));
  }
  // EINTR from close: the fd is closed all the same (Linux).
  if (::close(owned.release()) != 0 && errno != EINTR) return fail("close");
  return Status::Ok();
}

Result<OwnedFd> MetaRun::OpenDir(const Worker& w, uint64_t m) const {
  int fd = NoIntr(
      [&] { return ::openat(w.tfd.get(), Name('d', m).buf, O_RDONLY | O_DIRECTORY | O_CLOEXEC); });
  if (fd < 0) return Status::FromErrno(errno, PathOf(w, m) + ": open");
  return OwnedFd(fd);
}

Status MetaRun::Readdir(Worker& w, uint64_t m) {
  DS_ASSIGN_OR_RETURN(OwnedFd dfd, OpenDir(w, m));
  int fd = dfd.release();
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return Status::FromErrno(errno, PathOf(w, m) + ": opendir");
  }
  uint64_t entries = 0;
  errno = 0;
  while (const dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) entries++;
  }
  int err = errno;
  ::closedir(d);
  if (err != 0) return Status::FromErrno(err, PathOf(w, m) + ": readdir");
  w.ops += entries;
  if (entries != FilesIn(m)) {
    return Status(Code::kIOError, fmt::format("{}: readdir listed {} entries, expected {}",
                                              PathOf(w, m), entries, FilesIn(m)));
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
  OwnedFd dfd;
  for (uint64_t k = 0; k < o_.files && !Halted(); k++) {
    uint64_t m = k / o_.files_per_dir;
    if (k % o_.files_per_dir == 0) {
      DS_ASSIGN_OR_RETURN(dfd, OpenDir(w, m));
    }
    auto t0 = Clock::now();
    if (p == MetaPhase::kRemove) {
      Name f('f', k);
      if (NoIntr([&] { return ::unlinkat(dfd.get(), f.buf, 0); }) != 0) {
        return Status::FromErrno(errno, PathOf(w, m, f.buf) + ": unlink");
      }
      w.removed = k + 1;
    } else {
      DS_RETURN_IF_ERROR(CreateOrStatOrRead(w, p, k, dfd.get(), buf.get()));
    }
    w.lat.Add(NsSince(t0));
    w.ops++;
    if (p == MetaPhase::kRemove && (k + 1) % o_.files_per_dir == 0) {
      if (::unlinkat(w.tfd.get(), Name('d', m).buf, AT_REMOVEDIR) != 0) {
        return Status::FromErrno(errno, PathOf(w, m) + ": rmdir");
      }
    }
  }
  if (p == MetaPhase::kRemove && !Halted() && o_.files % o_.files_per_dir != 0) {
    if (::unlinkat(w.tfd.get(), Name('d', dirs_ - 1).buf, AT_REMOVEDIR) != 0) {
      return Status::FromErrno(errno, PathOf(w, dirs_ - 1) + ": rmdir");
    }
  }
  return Status::Ok();
}

// Removes what this worker made and the remove phase did not: by name, ENOENT is fine.
void MetaRun::Cleanup(Worker& w) {
  auto note = [&](const std::string& what) {
    if (w.cleanup_note.empty()) w.cleanup_note = Status::FromErrno(errno, what).message();
  };
  if (w.tfd.valid()) {
    OwnedFd dfd;
    for (uint64_t k = w.removed; k < w.created; k++) {
      uint64_t m = k / o_.files_per_dir;
      if (k == w.removed || k % o_.files_per_dir == 0) {
        auto d = OpenDir(w, m);
        dfd = d.ok() ? std::move(*d) : OwnedFd();
      }
      Name f('f', k);
      if (dfd.valid() && ::unlinkat(dfd.get(), f.buf, 0) != 0 && errno != ENOENT) {
        note(PathOf(w, m, f.buf) + ": unlink");
      }
    }
    for (uint64_t m = 0; m < w.dirs_made; m++) {
      if (::unlinkat(w.tfd.get(), Name('d', m).buf, AT_REMOVEDIR) != 0 && errno != ENOENT) {
        note(PathOf(w, m) + ": rmdir");
      }
    }
  }
  if (w.tdir_made && ::rmdir(w.dir.c_str()) != 0 && errno != ENOENT) note(w.dir + ": rmdir");
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
  if (!o_.root_exists && ::mkdir(root_.c_str(), 0755) != 0) {
    if (errno == EEXIST) {
      return Status(Code::kAlreadyExists, root_ + ": exists (left by an earlier run?); remove it");
    }
    return Status::FromErrno(errno, root_ + ": mkdir");
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
  if (!o_.keep && !o_.root_exists && ::rmdir(root_.c_str()) != 0 && r.cleanup_note.empty()) {
    r.cleanup_note = Status::FromErrno(errno, root_ + ": rmdir").message();
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
  MetaRun run(options, MetaRoot(options));
  return run.Run();
}

}  // namespace ds::bench
