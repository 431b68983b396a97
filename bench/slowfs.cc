#include "bench/slowfs.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "bench/stop.h"
#include "src/human.h"

namespace ds::bench {

namespace {

constexpr int kMountTimeoutMs = 10000;

bool IsMountPoint(const std::string& dir) {
  struct stat a, b;
  if (::stat(dir.c_str(), &a) != 0) return false;
  if (::stat((dir + "/..").c_str(), &b) != 0) return false;
  return a.st_dev != b.st_dev || a.st_ino == b.st_ino;
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

int RunQuiet(const std::vector<std::string>& argv) {
  pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 1);
    ::dup2(null, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string Ms(double seconds) { return fmt::format("{}", seconds * 1e3); }

}  // namespace

Result<std::string> SlowfsBinary() {
  if (const char* env = std::getenv("DSBENCH_SLOWFS"); env && *env) return std::string(env);
  char exe[4096];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return Status::FromErrno(errno, "readlink /proc/self/exe");
  std::string dir(exe, static_cast<size_t>(n));
  dir.resize(dir.rfind('/') + 1);
  std::string bin = dir + "fuse_latency";
  if (::access(bin.c_str(), X_OK) != 0) {
    return Status(Code::kUnsupported,
                  bin +
                      ": the slow file system's binary is missing; build the fuse_latency "
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
  } else if (IsMountPoint(mountpoint)) {
    return Status(Code::kInvalidArgument,
                  mountpoint + ": already a mount point; unmount it or choose another directory");
  }
  m.mountpoint_ = mountpoint;
  m.log_ = base + fmt::format("/dsbench-slowfs.{}.log", ::getpid());
  std::vector<std::string> argv = {bin,
                                   src,
                                   mountpoint,
                                   "-f",
                                   "--delay-ms",
                                   Ms(options.meta_latency),
                                   "--read-delay-ms",
                                   Ms(options.read_latency)};
  pid_t pid = ::fork();
  if (pid < 0) return Status::FromErrno(errno, "fork");
  if (pid == 0) {
    // Its own process group: a terminal's Ctrl-C stops dsbench, which then unmounts in order;
    // the file system must not vanish under reads still in flight.
    ::setpgid(0, 0);
    int log = ::open(m.log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int null = ::open("/dev/null", O_RDONLY);
    ::dup2(null, 0);
    if (log >= 0) {
      ::dup2(log, 1);
      ::dup2(log, 2);
    }
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  m.pid_ = pid;
  for (int waited = 0; !IsMountPoint(mountpoint); waited += 10) {
    int wst = 0;
    if (::waitpid(pid, &wst, WNOHANG) == pid || waited >= kMountTimeoutMs) {
      if (waited >= kMountTimeoutMs) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &wst, 0);
      }
      m.pid_ = -1;
      return Status(Code::kUnsupported,
                    fmt::format("slowfs: mounting {} at {} failed: {}", src, mountpoint,
                                waited >= kMountTimeoutMs ? "no mount after 10 s" : Tail(m.log_)));
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
  if (pid_ > 0) s = StopDaemon();
  if (own_dir_) ::rmdir(mountpoint_.c_str());
  own_dir_ = false;
  if (!log_.empty()) ::unlink(log_.c_str());
  log_.clear();
  return s;
}

Status SlowfsMount::StopDaemon() {
  Status s;
  if (IsMountPoint(mountpoint_) && RunQuiet({"fusermount3", "-u", mountpoint_}) != 0 &&
      ::umount2(mountpoint_.c_str(), MNT_DETACH) != 0) {
    s = Status::FromErrno(errno, "unmount " + mountpoint_);
    ::kill(pid_, SIGTERM);
  }
  int st = 0;
  while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  return s;
}

Status SlowfsMount::WaitUntilStopped() {
  while (!StopRequested()) {
    int st = 0;
    pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      Status s = WIFEXITED(st) && WEXITSTATUS(st) == 0
                     ? Status::Ok()
                     : Status(Code::kIOError, "slowfs: fuse_latency ended: " + Tail(log_));
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
