#include "slowfs/mount.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "src/stop.h"
#include "src/human.h"
#include "src/system_probe.h"

namespace ds::bench {

namespace {

constexpr int kMountTimeoutMs = 10000;
constexpr int kDaemonExitMs = 3000;

// Whether `dir` (canonical) is a mount point, from /proc/self/mountinfo: stat() cannot tell once
// the daemon died (ENOTCONN), and the mount must still be taken down then.
bool IsMounted(const std::string& dir) {
  std::ifstream f("/proc/self/mountinfo");
  std::stringstream text;
  text << f.rdbuf();
  for (const auto& m : ParseMountInfo(text.str())) {
    if (m.mount_point == dir) return true;
  }
  return false;
}

std::string Tail(const std::string& log) {
  std::ifstream f(log);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  if (s.size() > 400) s = "..." + s.substr(s.size() - 400);
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  return s;
}

// posix_spawn, not fork: no allocation or lock in a child of a multithreaded process. stdin is
// /dev/null, stdout and stderr go to out_fd (or /dev/null when -1); new_group puts the child in a
// process group of its own.
Result<pid_t> Spawn(const std::vector<std::string>& argv, int out_fd, bool new_group) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (out_fd >= 0) {
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 2);
  } else {
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  }
  if (new_group) {
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
  }
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Status::FromErrno(rc, "spawn " + argv[0]);
  return pid;
}

int Wait(pid_t pid) {
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// Waits up to ms for pid to exit; true when it did.
bool WaitFor(pid_t pid, int ms) {
  for (int waited = 0; waited < ms; waited += 10) {
    int st = 0;
    if (::waitpid(pid, &st, WNOHANG) == pid) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// A duration as the daemon's flags take it (src/human.h's ParseDuration).
std::string DurationArg(double seconds) { return fmt::format("{}ms", seconds * 1e3); }

}  // namespace

Result<std::string> SlowfsBinary() {
  if (const char* env = std::getenv("DSBENCH_SLOWFS"); env && *env) return std::string(env);
  char exe[4096];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return Status::FromErrno(errno, "readlink /proc/self/exe");
  std::string dir(exe, static_cast<size_t>(n));
  dir.resize(dir.rfind('/') + 1);
  std::string bin = dir + "dsbench-slowfs";
  if (::access(bin.c_str(), X_OK) != 0) {
    return Status(Code::kUnsupported,
                  bin +
                      ": the slow file system's binary is missing; build the dsbench-slowfs "
                      "target or set DSBENCH_SLOWFS to its path");
  }
  return bin;
}

Result<SlowfsMount> SlowfsMount::Mount(const std::string& src, std::string mountpoint,
                                       const SlowfsOptions& options) {
  if (options.meta_latency < 0 || options.read_latency < 0) {
    return Status(Code::kInvalidArgument, "slowfs latencies must not be negative");
  }
  struct stat st;
  if (::stat(src.c_str(), &st) != 0) return Status::FromErrno(errno, src, Code::kBadInput);
  if (!S_ISDIR(st.st_mode)) return Status(Code::kBadInput, src + ": not a directory");
  if (::access("/dev/fuse", R_OK | W_OK) != 0) {
    return Status(Code::kUnsupported,
                  "/dev/fuse is not usable here (no FUSE support): the slow file system needs it");
  }
  DS_ASSIGN_OR_RETURN(std::string bin, SlowfsBinary());
  SlowfsMount m;
  const char* tmp = std::getenv("TMPDIR");
  std::string base = tmp && *tmp ? tmp : "/tmp";
  if (mountpoint.empty()) {
    std::string tmpl = base + "/dsbench-slowfs.XXXXXX";
    if (!::mkdtemp(tmpl.data())) return Status::FromErrno(errno, "mkdtemp " + tmpl);
    mountpoint = tmpl;
    m.own_dir_ = true;
  } else if (::stat(mountpoint.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status(Code::kInvalidArgument,
                  mountpoint + ": the mount point must be an existing directory (mkdir it)");
  }
  char real[PATH_MAX];
  if (!::realpath(mountpoint.c_str(), real)) return Status::FromErrno(errno, mountpoint);
  if (IsMounted(real)) {
    return Status(Code::kInvalidArgument,
                  mountpoint + ": already a mount point; unmount it or choose another directory");
  }
  m.mountpoint_ = real;
  std::string log = base + "/dsbench-slowfs.XXXXXX.log";
  int log_fd = ::mkstemps(log.data(), 4);
  if (log_fd < 0) return Status::FromErrno(errno, "mkstemps " + log);
  m.log_ = log;
  auto pid =
      Spawn({bin, src, m.mountpoint_, "-f", "--meta-latency", DurationArg(options.meta_latency),
             "--read-latency", DurationArg(options.read_latency)},
            log_fd, /*new_group=*/true);
  ::close(log_fd);
  if (!pid.ok()) return pid.status();
  // Its own process group: a terminal's Ctrl-C stops dsbench, which then unmounts in order; the
  // file system must not vanish under reads still in flight.
  m.pid_ = *pid;
  for (int waited = 0; !IsMounted(m.mountpoint_); waited += 10) {
    int wst = 0;
    bool died = ::waitpid(m.pid_, &wst, WNOHANG) == m.pid_;
    if (died || waited >= kMountTimeoutMs || StopRequested()) {
      if (died) m.pid_ = -1;
      std::string why = died                        ? Tail(m.log_)
                        : waited >= kMountTimeoutMs ? "no mount after 10 s"
                                                    : "interrupted";
      (void)m.Unmount();  // kills a daemon that is still there, unmounts a late mount
      return Status(Code::kUnsupported,
                    fmt::format("slowfs: mounting {} at {} failed: {}", src, mountpoint, why));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return m;
}

SlowfsMount& SlowfsMount::operator=(SlowfsMount&& o) noexcept {
  if (this != &o) {
    (void)Unmount();
    mountpoint_ = std::move(o.mountpoint_);
    log_ = std::move(o.log_);
    pid_ = o.pid_;
    own_dir_ = o.own_dir_;
    o.pid_ = -1;
    o.own_dir_ = false;
    o.log_.clear();
  }
  return *this;
}

SlowfsMount::~SlowfsMount() { (void)Unmount(); }

Status SlowfsMount::Unmount() {
  Status s;
  if (!mountpoint_.empty() && IsMounted(mountpoint_)) {
    // -z: lazily, so a loader that still holds a file open does not make it fail (EBUSY).
    auto um = Spawn({"fusermount3", "-u", "-z", mountpoint_}, -1, false);
    if ((!um.ok() || Wait(*um) != 0) && ::umount2(mountpoint_.c_str(), MNT_DETACH) != 0) {
      s = Status::FromErrno(errno, "unmount " + mountpoint_);
    }
  }
  if (pid_ > 0) {
    // Unmounted, the daemon exits on its own; one that does not (a crash, a lingering open
    // file) is stopped.
    if (!WaitFor(pid_, kDaemonExitMs)) {
      ::kill(pid_, SIGTERM);
      if (!WaitFor(pid_, kDaemonExitMs)) {
        ::kill(pid_, SIGKILL);
        (void)Wait(pid_);
      }
    }
    pid_ = -1;
  }
  if (own_dir_) ::rmdir(mountpoint_.c_str());
  own_dir_ = false;
  if (!log_.empty()) ::unlink(log_.c_str());
  log_.clear();
  return s;
}

Status SlowfsMount::WaitUntilStopped() {
  while (!StopRequested()) {
    int st = 0;
    pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      std::string how = WIFSIGNALED(st) ? fmt::format("killed by signal {}", WTERMSIG(st))
                                        : fmt::format("exit status {}", WEXITSTATUS(st));
      Status s = WIFEXITED(st) && WEXITSTATUS(st) == 0
                     ? Status::Ok()
                     : Status(Code::kIOError, fmt::format("slowfs: dsbench-slowfs ended ({}), {} "
                                                          "unmounted: {}",
                                                          how, mountpoint_, Tail(log_)));
      (void)Unmount();
      return s;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Unmount();
}

Result<SlowfsMount> MountDataset(const std::string& dataset, const SlowfsOptions& options,
                                 std::string* path_inside) {
  struct stat st;
  if (::stat(dataset.c_str(), &st) != 0) return Status::FromErrno(errno, dataset, Code::kBadInput);
  std::string dir = dataset, name;
  if (!S_ISDIR(st.st_mode)) {
    size_t slash = dataset.rfind('/');
    dir = slash == std::string::npos ? "." : dataset.substr(0, slash == 0 ? 1 : slash);
    name = dataset.substr(slash == std::string::npos ? 0 : slash + 1);
  }
  DS_ASSIGN_OR_RETURN(SlowfsMount m, SlowfsMount::Mount(dir, "", options));
  *path_inside = name.empty() ? m.mountpoint() : m.mountpoint() + "/" + name;
  return m;
}

std::string SlowfsText(const SlowfsOptions& o) {
  std::string t = FormatDuration(o.meta_latency) + " metadata";
  if (o.read_latency > 0) t += ", " + FormatDuration(o.read_latency) + " read";
  return t + " round trips";
}

}  // namespace ds::bench
