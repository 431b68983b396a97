#include "src/dir_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace ds {

long FlockHolder(std::string_view proc_locks, unsigned dev_major, unsigned dev_minor,
                 unsigned long ino, bool* exclusive) {
  // "1: FLOCK  ADVISORY  WRITE 1234 08:01:123456 0 EOF" (proc(5)); blocked waiters ("->") skipped.
  std::istringstream in{std::string(proc_locks)};
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string id, kind, mode, rw, where;
    long pid = 0;
    if (!(f >> id >> kind)) continue;
    if (kind == "->" || kind != "FLOCK") continue;
    if (!(f >> mode >> rw >> pid >> where)) continue;
    unsigned maj = 0, min = 0;
    unsigned long node = 0;
    if (std::sscanf(where.c_str(), "%x:%x:%lu", &maj, &min, &node) != 3) continue;
    if (maj == dev_major && min == dev_minor && node == ino) {
      if (exclusive) *exclusive = rw == "WRITE";
      return pid;
    }
  }
  return 0;
}

namespace {

// The holder of fd's flock from /proc/locks (0: not listed), and whether it is a writer's.
long Holder(int fd, bool* exclusive) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return 0;
  std::ifstream locks("/proc/locks");
  std::stringstream text;
  text << locks.rdbuf();
  return FlockHolder(text.str(), major(st.st_dev), minor(st.st_dev), st.st_ino, exclusive);
}

Status BeingWritten(long pid, const std::string& dir) {
  return Status(Code::kAlreadyExists,
                fmt::format("{}: is being written by {}; wait for it to finish (two writers "
                            "into one directory would mix their files, and a reader would see "
                            "a half-written dataset)",
                            dir, pid > 0 ? fmt::format("PID {}", pid) : "another process"));
}

// flock(fd, op | LOCK_NB), tried again while the lock in the way is not a writer's: 0 when
// taken, else errno (EWOULDBLOCK: still held, *writer the holder's PID, 0 if unseen). A refusal is
// reported only when /proc/locks lists a writer's lock, or after kWriterLockRetries x 10 ms: a
// holder that let go between the failed flock and the read of /proc/locks (a reader done, a writer
// just finished) would otherwise be reported as "another process" (this once failed
// tests/e2e/locks.sh in CI).
int TryFlock(int fd, int op, long* writer) {
  *writer = 0;
  for (int i = 0;; i++) {
    if (::flock(fd, op | LOCK_NB) == 0) return 0;
    int err = errno;
    if (err != EWOULDBLOCK || i == kWriterLockRetries) return err;
    bool exclusive = false;
    long pid = Holder(fd, &exclusive);
    if (pid != 0 && exclusive) {
      *writer = pid;  // named from this read: a second one could miss a writer just done
      return err;
    }
    ::usleep(10'000);
  }
}

}  // namespace

Result<OwnedFd> LockDirectory(const std::string& dir, std::string* warning) {
  int raw = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (raw < 0) return Status::FromErrno(errno, dir);
  OwnedFd fd(raw);
  // Readers hold a shared lock only while they open a dataset (LockDirectoryShared): wait
  // their moment out, but refuse at once when the holder is a writer.
  long writer = 0;
  if (int err = TryFlock(fd.get(), LOCK_EX, &writer); err != 0) {
    if (err == EWOULDBLOCK) return BeingWritten(writer, dir);
    if (warning) {
      *warning = fmt::format(
          "{}: cannot lock ({}); going on unlocked, so make sure no other "
          "run writes here",
          dir, std::strerror(err));
    }
    return fd;
  }
  struct stat held, now;
  if (::fstat(fd.get(), &held) != 0 || ::stat(dir.c_str(), &now) != 0 ||
      held.st_dev != now.st_dev || held.st_ino != now.st_ino) {
    return Status(Code::kAlreadyExists,
                  dir +
                      ": was removed or replaced while being locked (another writer?); "
                      "run again");
  }
  return fd;
}

Result<OwnedFd> LockDirectoryShared(const std::string& dir) {
  int raw = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (raw < 0) return Status::FromErrno(errno, dir);
  OwnedFd fd(raw);
  long writer = 0;
  if (TryFlock(fd.get(), LOCK_SH, &writer) == EWOULDBLOCK) return BeingWritten(writer, dir);
  return fd;  // locked, or flock refused here (NFS, FUSE): nothing to learn, so go on
}

}  // namespace ds
