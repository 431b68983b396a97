#include "bench/watch/watch.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <thread>

#include "src/epoch_marker.h"
#include "src/fd.h"
#include "src/human.h"
#include "src/page_cache.h"
#include "src/stop.h"

namespace ds::bench {

Status CheckWatch(const WatchOptions& o) {
  if (o.command.empty() == (o.pid == 0)) {
    return Status(Code::kInvalidArgument,
                  "give the command to run (after --) or a `pid` to watch, one of them");
  }
  if (!(o.interval > 0) || !std::isfinite(o.interval)) {
    return Status(Code::kInvalidArgument, "`interval` must be above 0 (e.g. 30s, 500ms)");
  }
  if (o.pid < 0) return Status(Code::kInvalidArgument, "`pid` must be a positive process id");
  if (o.pid > 0 && ::kill(o.pid, 0) != 0 && errno == ESRCH) {
    return Status(
        Code::kInvalidArgument,
        fmt::format("`pid` {}: no such process (check it with `ps -p {}`)", o.pid, o.pid));
  }
  return Status::Ok();
}

namespace {

using Clock = std::chrono::steady_clock;
// The costly readings, every kHeavyEvery samples (the first and the last too): PSS
// (smaps_rollup walks each process's page tables) and the page-cache residency of the job's open
// files (mincore: 3 ms a GiB here). Measured: they were 2/3 of watch's CPU at a 1 s interval.
// Epoch markers take the residency at their own moment (TakeSnap).
constexpr int kHeavyEvery = 10;
// Between samples: the job's exit, a stop and new epoch markers are looked for this often.
constexpr auto kPoll = std::chrono::milliseconds(50);

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string DecodeExit(int st) {
  if (WIFSIGNALED(st)) return fmt::format("killed by signal {}", WTERMSIG(st));
  return fmt::format("exit {}", WEXITSTATUS(st));
}

class Watcher {
 public:
  Watcher(const WatchOptions& o, WatchResult* r) : o_(o), r_(*r) {}
  ~Watcher() {
    if (epochs_temp_) ::unlink(epochs_path_.c_str());
  }
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;
  Status Start();
  void Run();
  void LogLine(const nlohmann::json& j);

 private:
  void Tick(bool final_tick);
  void Devices(const std::vector<HeldFile>& files);
  double Residency(const std::vector<HeldFile>& files);
  struct Snap {  // the job's state at an epoch marker
    double residency = -1;
    uint64_t read_bytes = 0, memory = 0, available = 0;
  };
  Snap TakeSnap();
  // Reads the epoch-marker lines written since the last call; at a new one, the job's state
  // (`have`, or a fresh TakeSnap()) goes into its epoch.
  void PollEpochs(const Snap* have);
  bool WaitUntil(Clock::time_point next);  // false: the job has ended or a stop came
  void Reap();
  bool JobAlive();
  void EndTree();
  std::vector<pid_t> Tree();
  double Elapsed() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }

  const WatchOptions& o_;
  WatchResult& r_;
  OwnedFd log_;
  std::string epochs_path_;
  bool epochs_temp_ = false;
  OwnedFd epochs_fd_;
  uint64_t epochs_offset_ = 0;
  std::string epochs_partial_;
  pid_t child_ = 0;
  Clock::time_point t0_;
  double unix0_ = 0;
  std::set<dev_t> seen_devs_;
  bool residency_note_ = false;
};

Status Watcher::Start() {
  if (!o_.log.empty()) {
    int fd = ::open(o_.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      return Status(Code::kIOError, fmt::format("`log` {}: cannot open for writing: {} (choose a "
                                                "writable path)",
                                                o_.log, std::strerror(errno)));
    }
    log_ = OwnedFd(fd);
  }
  epochs_path_ = o_.epochs;
  if (!epochs_path_.empty() && !o_.command.empty()) {
    // Given for a command: this run's markers only (a stale file's epochs would mix in), and it
    // exists, since markers append to an existing file and never create one.
    int fd = ::open(epochs_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      return Status(Code::kIOError, fmt::format("`epochs` {}: cannot create it: {}", epochs_path_,
                                                std::strerror(errno)));
    }
    ::close(fd);
  }
  if (epochs_path_.empty() && !o_.command.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = fmt::format("{}/dsbench-watch-epochs.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = ::mkstemp(templ.data());
    if (fd < 0) {
      return Status(Code::kIOError, fmt::format("cannot create the epoch-marker file {}: {}", templ,
                                                std::strerror(errno)));
    }
    ::close(fd);
    epochs_path_ = templ;
    epochs_temp_ = true;
  }
  std::string cwd = o_.pid ? fmt::format("/proc/{}/cwd/.", o_.pid) : std::string(".");
  nlohmann::json base = Baseline(cwd, &r_.baseline_probe, &r_.baseline);
  r_.min_available = r_.baseline.mem_available;
  std::string ms_from =
      o_.pid ? fmt::format("/proc/{}/mountstats", o_.pid) : "/proc/self/mountstats";
  if (auto t = ReadProcText(ms_from); t.ok()) r_.nfs_first = ParseMountstats(*t);
  t0_ = Clock::now();
  unix0_ = UnixNow();

  if (!o_.command.empty()) {
    // Orphaned descendants (a worker whose parent died) become watch's children: still seen,
    // still ended on a stop.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    if (!epochs_path_.empty()) ::setenv(kWatchEpochsEnv, epochs_path_.c_str(), 1);
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return Status(Code::kIOError, "pipe2 failed");
    std::vector<char*> argv;
    for (const std::string& a : o_.command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_t pid = ::fork();
    if (pid < 0) return Status(Code::kIOError, fmt::format("fork: {}", std::strerror(errno)));
    if (pid == 0) {
      ::close(p[0]);
      ::signal(SIGINT, SIG_DFL);
      ::signal(SIGTERM, SIG_DFL);
      ::execvp(argv[0], argv.data());
      int e = errno;
      [[maybe_unused]] ssize_t n = ::write(p[1], &e, sizeof e);
      ::_exit(127);
    }
    ::close(p[1]);
    int e = 0;
    ssize_t n = ::read(p[0], &e, sizeof e);
    ::close(p[0]);
    child_ = pid;
    if (n == static_cast<ssize_t>(sizeof e)) {
      ::waitpid(pid, nullptr, 0);
      child_ = 0;
      if (log_.valid()) ::unlink(o_.log.c_str());  // nothing ran: no log
      return Status(Code::kInvalidArgument,
                    fmt::format("cannot run `{}`: {} (check the command and PATH)", o_.command[0],
                                std::strerror(e)));
    }
  }
  base["time"] = unix0_;
  base["interval_s"] = o_.interval;
  if (!o_.command.empty()) base["command"] = o_.command;
  if (o_.pid) base["pid"] = o_.pid;
  LogLine(base);
  return Status::Ok();
}

std::vector<pid_t> Watcher::Tree() {
  if (o_.pid) return ProcessTree(o_.pid);
  std::vector<pid_t> t = ProcessTree(::getpid());
  if (!t.empty()) t.erase(t.begin());  // not watch itself
  return t;
}

void Watcher::LogLine(const nlohmann::json& j) {
  if (!log_.valid()) return;
  // Replace, not throw: a process name cut mid-character, a job's raw marker line or a path
  // need not be UTF-8.
  std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (Status s = WriteFull(log_.get(), line.data(), line.size(), o_.log); !s.ok()) {
    r_.notes.push_back(fmt::format("the log stopped: {}", s.message()));
    log_ = OwnedFd();
  }
}

void Watcher::Devices(const std::vector<HeldFile>& files) {
  for (const HeldFile& of : files) {
    const std::string& f = of.path;
    struct stat st;
    if (::stat(f.c_str(), &st) != 0 || !seen_devs_.insert(st.st_dev).second) continue;
    SystemProbe p = ProbeSystem(f);
    std::string mount = fmt::format("{} ({})", p.mount_point, p.mount_fstype);
    if (std::find(r_.mounts.begin(), r_.mounts.end(), mount) == r_.mounts.end()) {
      r_.mounts.push_back(mount);
    }
    if (!p.block_device.empty() && !r_.devices.count(p.block_device)) {
      auto d = ReadDiskStat(p.block_device);
      if (!d.ok()) continue;
      DeviceActivity& a = r_.devices[p.block_device];
      a.name = p.block_device;
      a.first = a.last = *d;
      a.first_t = a.last_t = Elapsed();
    }
  }
}

double Watcher::Residency(const std::vector<HeldFile>& files) {
  constexpr size_t kMaxFiles = 64;  // the cost of a sample stays bounded
  uint64_t pages = 0, resident = 0;
  size_t n = 0;
  for (const HeldFile& f : files) {
    if (n++ == kMaxFiles) break;
    auto r = ResidentPagesOf(f);  // the job's own descriptor: no open of ours
    if (!r.ok()) {
      if (!residency_note_) {
        residency_note_ = true;
        r_.notes.push_back("page-cache residency not measured: " + r.status().message() +
                           " (needs root or ptrace rights, Linux 5.6+)");
      }
      continue;
    }
    pages += r->pages;
    resident += r->resident;
  }
  return pages ? static_cast<double>(resident) / pages : -1;
}

Watcher::Snap Watcher::TakeSnap() {
  Snap snap;
  std::map<std::string, HeldFile> files;
  std::set<pid_t> alive;
  for (pid_t pid : Tree()) {
    auto p = ReadProcSample(pid);
    if (!p.ok() || p->state == 'Z') continue;
    alive.insert(pid);
    snap.memory += p->rss;
    if (p->io_ok) snap.read_bytes += p->read_bytes;
    for (HeldFile& f : OpenFiles(pid)) files.emplace(f.path, std::move(f));
    // Recorded, so that a worker that ends before the next sample still counts.
    ProcSeries& ps = r_.processes[pid];
    if (ps.comm.empty()) ps.comm = p->comm, ps.first_seen = Elapsed();
    if (p->io_ok) ps.read_bytes = p->read_bytes;
  }
  for (const auto& [pid, ps] : r_.processes) {
    if (!alive.count(pid)) snap.read_bytes += ps.read_bytes;  // exited: its last count
  }
  std::vector<HeldFile> open;
  for (auto& [path, f] : files) open.push_back(std::move(f));
  snap.residency = Residency(open);
  snap.available = ReadSystemCounters().mem_available;
  return snap;
}

void Watcher::PollEpochs(const Snap* have) {
  if (epochs_path_.empty()) return;
  if (!epochs_fd_.valid()) {
    int fd = ::open(epochs_path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    epochs_fd_ = OwnedFd(fd);
  }
  char buf[65536];
  ssize_t n;
  std::vector<std::string> lines;
  while ((n = ::pread(epochs_fd_.get(), buf, sizeof buf, static_cast<off_t>(epochs_offset_))) > 0) {
    epochs_offset_ += static_cast<uint64_t>(n);
    epochs_partial_.append(buf, static_cast<size_t>(n));
    size_t eol;
    while ((eol = epochs_partial_.find('\n')) != std::string::npos) {
      lines.push_back(epochs_partial_.substr(0, eol));
      epochs_partial_.erase(0, eol + 1);
    }
  }
  if (lines.empty()) return;
  // The job's state at the marker, to the poll's precision (kPoll between samples).
  Snap snap = have ? *have : TakeSnap();
  for (const std::string& line : lines) {
    size_t before = r_.epochs.size();
    std::vector<int> open_before;
    for (const EpochStats& e : r_.epochs) open_before.push_back(e.end >= 0 ? 1 : 0);
    AddEpochLine(line, unix0_, &r_.epochs);
    for (size_t i = 0; i < r_.epochs.size(); i++) {
      EpochStats& e = r_.epochs[i];
      if (i >= before) {  // a new epoch: the state at its start
        e.residency_at_start = snap.residency;
        e.read_bytes = snap.read_bytes;  // the counter at the start; made a delta at the end
      }
      bool ended_now = e.end >= 0 && (i >= before || !open_before[i]);
      if (ended_now) {
        e.read_bytes = snap.read_bytes - std::min(snap.read_bytes, e.read_bytes);
        e.rss_end = snap.memory;
        e.available_end = snap.available;
      }
    }
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!line.empty()) {
      LogLine(j.is_discarded() ? nlohmann::json{{"type", "epoch_marker_bad"}, {"line", line}}
                               : nlohmann::json{{"type", "epoch_marker"}, {"marker", j}});
    }
  }
}

void Watcher::Tick(bool final_tick) {
  double t = Elapsed();
  std::vector<pid_t> pids = Tree();
  nlohmann::json procs = nlohmann::json::array();
  uint64_t memory = 0, pss = 0;
  // The last sample is heavy while the job still runs (a stop, --pid); after a command's exit,
  // what remains are its last workers on their way out.
  const bool heavy = r_.samples % kHeavyEvery == 0 || (final_tick && JobAlive());
  std::map<std::string, HeldFile> files;
  std::set<pid_t> alive;
  for (pid_t pid : pids) {
    auto s = ReadProcSample(pid, heavy);
    if (!s.ok() || s->state == 'Z') continue;
    alive.insert(pid);
    ProcSeries& ps = r_.processes[pid];
    if (ps.comm.empty()) {
      ps.comm = s->comm;
      ps.first_seen = t;
    }
    ps.last_seen = t;
    ps.rss.Add(t, static_cast<double>(s->rss));
    ps.vm_peak = std::max(ps.vm_peak, s->vm_peak);
    ps.cpu_seconds = s->cpu_seconds;
    ps.majflt = s->majflt;
    if (s->io_ok) ps.read_bytes = s->read_bytes;
    memory += s->rss;
    pss += s->pss;
    procs.push_back(s->ToJson());
    for (HeldFile& f : OpenFiles(pid)) files.emplace(f.path, std::move(f));
  }
  uint64_t read_bytes = 0;
  double cpu = 0;
  for (auto& [pid, ps] : r_.processes) {
    if (!alive.count(pid)) ps.exited = true;
    read_bytes += ps.read_bytes;
    cpu += ps.cpu_seconds;
  }
  r_.cpu_seconds = cpu;
  r_.max_processes = std::max<int>(r_.max_processes, static_cast<int>(alive.size()));
  if (!alive.empty()) r_.job_memory.Add(t, static_cast<double>(memory));
  if (heavy && !alive.empty()) r_.job_pss_last = pss, r_.job_pss_t = t;
  std::vector<HeldFile> open;
  for (auto& [path, f] : files) open.push_back(std::move(f));
  Devices(open);
  double residency = heavy ? Residency(open) : -1;
  r_.last = ReadSystemCounters();
  r_.min_available = std::min(r_.min_available, r_.last.mem_available);
  nlohmann::json devs = nlohmann::json::object();
  if (auto text = ReadProcText("/proc/diskstats"); text.ok() && !r_.devices.empty()) {
    for (const DiskStat& d : ParseDiskStats(*text)) {
      auto it = r_.devices.find(d.name);
      if (it == r_.devices.end()) continue;
      DeviceActivity& a = it->second;
      DiskUtil u = DiskDelta(a.last, d, (t - a.last_t) * 1e3);
      if (t > a.last_t) {
        a.intervals++;
        if (u.util() >= 90 && u.r_await_ms() >= 20) a.saturated++;
        a.peak_util = std::max(a.peak_util, u.util());
        a.peak_r_await_ms = std::max(a.peak_r_await_ms, u.r_await_ms());
      }
      a.last = d;
      a.last_t = t;
      devs[d.name] = {{"util", u.util()},
                      {"r_s", u.reads_per_sec()},
                      {"rMB_s", u.read_bytes_per_sec() / 1e6},
                      {"r_await_ms", u.r_await_ms()},
                      {"aqu_sz", u.msec > 0 ? u.in_queue / u.msec : 0}};
    }
  }
  Snap snap{residency, read_bytes, memory, r_.last.mem_available};
  PollEpochs(heavy ? &snap : nullptr);  // without the residency, markers take their own
  r_.samples++;
  nlohmann::json line = {{"type", "sample"},
                         {"t", t},
                         {"processes", procs},
                         {"job",
                          {{"processes", alive.size()},
                           {"memory", memory},
                           {"pss", heavy ? nlohmann::json(pss) : nlohmann::json()},
                           {"cpu_seconds", cpu},
                           {"read_bytes", read_bytes},
                           {"open_files", open.size()}}},
                         {"system", r_.last.ToJson()},
                         {"devices", devs}};
  if (residency >= 0) line["job"]["page_cache_residency"] = residency;
  if (final_tick) line["final"] = true;
  LogLine(line);
  if (o_.live) {
    std::string epoch = r_.epochs.empty() ? "" : fmt::format(" | epoch {}", r_.epochs.back().epoch);
    std::fprintf(stderr, "\r\033[Kwatch %s | %zu procs | mem %s | avail %s | cpu %.0fs%s",
                 FormatDuration(t).c_str(), alive.size(), FormatBytes(memory).c_str(),
                 FormatBytes(r_.last.mem_available).c_str(), cpu, epoch.c_str());
    std::fflush(stderr);
  }
}

void Watcher::Reap() {
  int st = 0;
  pid_t w;
  while ((w = ::waitpid(-1, &st, WNOHANG)) > 0) {
    if (w == child_) {
      r_.exit_status = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
      r_.notes.push_back(fmt::format("the command ended: {}", DecodeExit(st)));
    }
  }
}

bool Watcher::JobAlive() {
  if (child_) return !r_.exit_status.has_value();
  auto s = ReadProcSample(o_.pid);
  return s.ok() && s->state != 'Z';
}

bool Watcher::WaitUntil(Clock::time_point next) {
  while (true) {
    Reap();
    if (!JobAlive() || StopRequested()) return false;
    PollEpochs(nullptr);
    auto now = Clock::now();
    if (now >= next) return true;
    std::this_thread::sleep_for(std::min<Clock::duration>(next - now, kPoll));
  }
}

// On a stop: SIGINT to the command, then SIGTERM and SIGKILL to what is left of the tree.
void Watcher::EndTree() {
  if (!child_) return;
  auto wait_empty = [&](double seconds) {
    auto until = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < until) {
      Reap();
      if (Tree().empty()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  };
  // A terminal's Ctrl-C already reached the command (it is in watch's process group, in the
  // foreground): a second SIGINT could cut short its own handler (a checkpoint on
  // KeyboardInterrupt). Otherwise (kill -INT, SIGTERM, a background watch) it is sent once here.
  bool from_terminal = ::isatty(STDIN_FILENO) && ::tcgetpgrp(STDIN_FILENO) == ::getpgrp();
  if (!r_.exit_status && !from_terminal) ::kill(child_, SIGINT);
  if (wait_empty(5)) return;
  std::vector<pid_t> left = Tree();
  r_.notes.push_back(
      fmt::format("{} process(es) still ran 5 s after SIGINT: sent SIGTERM", left.size()));
  for (pid_t p : left) ::kill(p, SIGTERM);
  if (wait_empty(2)) return;
  for (pid_t p : Tree()) ::kill(p, SIGKILL);
  wait_empty(5);
  r_.notes.push_back("the job did not end on SIGINT or SIGTERM: it was killed (SIGKILL)");
}

void Watcher::Run() {
  auto interval =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o_.interval));
  auto next = t0_;
  while (true) {
    Tick(false);
    next += interval;
    if (!WaitUntil(next)) break;
  }
  r_.stopped = StopRequested();
  if (r_.stopped) {
    Tick(true);  // the state at the stop, before the job is ended
    EndTree();
  } else if (child_) {
    // The command has exited: a moment for its workers to follow, then the last sample.
    for (int i = 0; i < 50 && !Tree().empty(); i++) {
      Reap();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    Tick(true);
  } else {
    Tick(true);
  }
  Reap();
  if (o_.live) std::fputs("\r\033[K", stderr);
  r_.seconds = Elapsed();
  // The same view as at the start (the job's mount namespace) while the job lives.
  auto ms =
      ReadProcText(o_.pid ? fmt::format("/proc/{}/mountstats", o_.pid) : "/proc/self/mountstats");
  if (!ms.ok()) ms = ReadProcText("/proc/self/mountstats");
  if (ms.ok()) r_.nfs_last = ParseMountstats(*ms);
  struct rusage ru;
  if (::getrusage(RUSAGE_SELF, &ru) == 0) {
    r_.watch_cpu_seconds = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
                           ru.ru_stime.tv_usec / 1e6;
  }
}

}  // namespace

nlohmann::json Baseline(const std::string& path, SystemProbe* probe, SystemCounters* counters) {
  *probe = ProbeSystem(path);
  *counters = ReadSystemCounters();
  nlohmann::json base = {
      {"type", "baseline"}, {"probe", probe->ToJson()}, {"system", counters->ToJson()}};
  // The device's activity since boot: what iostat -x prints first.
  if (!probe->block_device.empty()) {
    if (auto d = ReadDiskStat(probe->block_device); d.ok()) {
      struct timespec up;
      ::clock_gettime(CLOCK_BOOTTIME, &up);
      DiskUtil u = DiskDelta(DiskStat{}, *d, up.tv_sec * 1e3 + up.tv_nsec / 1e6);
      base["block_device_since_boot"] = u.ToJson();
      base["block_device_since_boot"]["aqu_sz"] = u.msec > 0 ? u.in_queue / u.msec : 0;
    }
  }
  // nvidia-smi's utilization and memory where it exists; nothing where it does not.
  // Under `timeout`: a stuck GPU driver must not hang the baseline.
  if (FILE* f =
          ::popen("timeout 5 nvidia-smi --query-gpu=index,utilization.gpu,memory.used,memory.total "
                  "--format=csv,noheader,nounits 2>/dev/null",
                  "r")) {
    char line[256];
    nlohmann::json gpus = nlohmann::json::array();
    while (std::fgets(line, sizeof line, f)) gpus.push_back(std::string(line, strcspn(line, "\n")));
    if (::pclose(f) == 0 && !gpus.empty()) base["nvidia_smi"] = gpus;
  }
  return base;
}

Result<WatchResult> RunWatch(const WatchOptions& o) {
  DS_RETURN_IF_ERROR(CheckWatch(o));
  WatchResult r;
  Watcher w(o, &r);
  DS_RETURN_IF_ERROR(w.Start());
  w.Run();
  Judge(o, &r);
  w.LogLine({{"type", "report"}, {"report", WatchJson(r)}});
  return r;
}

}  // namespace ds::bench
