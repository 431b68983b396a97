#include "slowfs/ops.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

namespace ds::slowfs {

namespace {

// A directory stream plus the entry that did not fit into the previous READDIR reply
// (same scheme as libfuse's example/passthrough.c).
struct DirHandle {
  DIR* dp = nullptr;
  struct dirent* entry = nullptr;
  off_t offset = 0;
};

// Sleeps ns nanoseconds against an absolute CLOCK_MONOTONIC deadline, so a signal that
// interrupts the sleep does not shorten or lengthen it.
void SleepNs(int64_t ns) {
  if (ns <= 0) return;
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  int64_t nsec = t.tv_nsec + ns;
  t.tv_sec += static_cast<time_t>(nsec / 1000000000LL);
  t.tv_nsec = static_cast<long>(nsec % 1000000000LL);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, nullptr) == EINTR) {
  }
}

State& S() { return *static_cast<State*>(fuse_get_context()->private_data); }

void MetaDelay() { SleepNs(S().meta_latency_ns); }

// libfuse paths are "/" or "/a/b"; *at() wants "." or "a/b".
const char* Rel(const char* path) {
  if (path == nullptr || path[0] == '\0' || (path[0] == '/' && path[1] == '\0')) return ".";
  return path[0] == '/' ? path + 1 : path;
}

// A path for the calls that have no *at() form (xattrs): through /proc/self/fd/<root>, which
// resolves to SRC itself even if a mount (e.g. MNT) now covers SRC's path.
std::string ProcPath(const char* path) {
  std::string p = S().root_proc;
  const char* rel = Rel(path);
  if (strcmp(rel, ".") != 0) {
    p += '/';
    p += rel;
  }
  return p;
}

int Erofs() {
  S().stats.erofs.fetch_add(1, std::memory_order_relaxed);
  return -EROFS;
}

void* OpInit(struct fuse_conn_info* conn, struct fuse_config* cfg) {
  // Inode numbers from SRC (stable, match `stat SRC/...`, let tar/find/sync tools detect
  // hard links); readdir passes the same numbers.
  cfg->use_ino = 1;
  cfg->readdir_ino = 0;
  // read/release/getattr on an open file use fi->fh; no path needed.
  cfg->nullpath_ok = 1;
  cfg->entry_timeout = S().cache_timeout;
  cfg->attr_timeout = S().cache_timeout;
  cfg->negative_timeout = S().cache_timeout;
  // Keep the page cache across open() (the tree is assumed static while mounted); reads of a
  // cached file then cost nothing, as on an NFS client whose cache is still valid.
  cfg->kernel_cache = S().kernel_cache ? 1 : 0;
  cfg->auto_cache = 0;  // would call (delayed) getattr on every open
  cfg->direct_io = 0;
  cfg->no_rofd_flush = 1;  // no FLUSH round trip when closing a read-only descriptor
  cfg->intr = 0;

  // A size/mtime change seen by GETATTR must not invalidate data, and reads must not trigger
  // GETATTRs of their own.
  conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
  // The high-level API can only fill READDIRPLUS by calling getattr() once per entry (serially,
  // each delayed), which is nothing like NFS READDIRPLUS. Plain READDIR + one LOOKUP per name.
  conn->want &= ~(FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO);
  // Concurrent LOOKUPs/READDIRs in one directory (otherwise the kernel serializes them per
  // directory and concurrency could not hide the latency). libfuse < 3.16 drops this flag from
  // the INIT reply; init_fixup.h puts it back.
  if (conn->capable & FUSE_CAP_PARALLEL_DIROPS) conn->want |= FUSE_CAP_PARALLEL_DIROPS;
  if (conn->capable & FUSE_CAP_ASYNC_READ) conn->want |= FUSE_CAP_ASYNC_READ;
  // Symlink targets stay in the kernel's page cache like NFS's (READLINK once per cold inode).
  if (conn->capable & FUSE_CAP_CACHE_SYMLINKS) conn->want |= FUSE_CAP_CACHE_SYMLINKS;
  // Readahead READs are "background" requests, of which the kernel keeps only max_background
  // (default 12) in flight; allow as many as there are worker threads.
  unsigned bg = S().max_threads < 12 ? 12 : S().max_threads;
  if (bg > 65535) bg = 65535;
  conn->max_background = bg;
  conn->congestion_threshold = bg * 3 / 4 > 0 ? bg * 3 / 4 : 1;
  if (S().debug) {
    std::fprintf(stderr, "dsbench-slowfs: init: capable=0x%08x want=0x%08x\n", conn->capable,
                 conn->want);
  }
  return fuse_get_context()->private_data;  // what init returns becomes private_data
}

int OpGetattr(const char* path, struct stat* st, struct fuse_file_info* fi) {
  S().stats.getattr.fetch_add(1, std::memory_order_relaxed);
  MetaDelay();
  int r = fi != nullptr ? fstat(static_cast<int>(fi->fh), st)
                        : fstatat(S().root.get(), Rel(path), st, AT_SYMLINK_NOFOLLOW);
  return r == -1 ? -errno : 0;
}

int OpReadlink(const char* path, char* buf, size_t size) {
  S().stats.readlink.fetch_add(1, std::memory_order_relaxed);
  MetaDelay();
  if (size == 0) return -EINVAL;
  ssize_t n = readlinkat(S().root.get(), Rel(path), buf, size - 1);
  if (n == -1) return -errno;
  buf[n] = '\0';  // libfuse truncates silently, like readlink(2)
  return 0;
}

int OpOpen(const char* path, struct fuse_file_info* fi) {
  S().stats.open.fetch_add(1, std::memory_order_relaxed);
  MetaDelay();
  if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & (O_TRUNC | O_CREAT)) != 0) {
    return Erofs();
  }
  const int base = O_RDONLY | O_CLOEXEC | O_NOFOLLOW;
  // O_NOATIME keeps reads through the mount from touching SRC's atimes; only the owner (or
  // CAP_FOWNER) may use it, so fall back without it.
  int fd = openat(S().root.get(), Rel(path), base | O_NOATIME);
  if (fd == -1 && errno == EPERM) fd = openat(S().root.get(), Rel(path), base);
  if (fd == -1) return -errno;
  fi->fh = static_cast<uint64_t>(fd);
  fi->noflush = 1;
  return 0;
}

int OpRead(const char*, char* buf, size_t size, off_t off, struct fuse_file_info* fi) {
  S().stats.read.fetch_add(1, std::memory_order_relaxed);
  SleepNs(S().read_latency_ns);
  const int fd = static_cast<int>(fi->fh);
  size_t done = 0;
  // A short reply means EOF to the kernel, so fill the buffer unless the file really ends.
  while (done < size) {
    ssize_t n = pread(fd, buf + done, size - done, off + static_cast<off_t>(done));
    if (n == -1) {
      if (errno == EINTR) continue;
      if (done > 0) break;
      return -errno;
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  S().stats.read_bytes.fetch_add(done, std::memory_order_relaxed);
  return static_cast<int>(done);
}

int OpRelease(const char*, struct fuse_file_info* fi) {
  close(static_cast<int>(fi->fh));
  return 0;
}

off_t OpLseek(const char*, off_t off, int whence, struct fuse_file_info* fi) {
  off_t r = lseek(static_cast<int>(fi->fh), off, whence);
  return r == -1 ? -errno : r;
}

int OpOpendir(const char* path, struct fuse_file_info* fi) {
  S().stats.opendir.fetch_add(1, std::memory_order_relaxed);
  MetaDelay();
  int fd = openat(S().root.get(), Rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (fd == -1) return -errno;
  DIR* dp = fdopendir(fd);
  if (dp == nullptr) {
    int e = errno;
    close(fd);
    return -e;
  }
  auto* d = new (std::nothrow) DirHandle;
  if (d == nullptr) {
    closedir(dp);
    return -ENOMEM;
  }
  d->dp = dp;
  fi->fh = reinterpret_cast<uintptr_t>(d);
  return 0;
}

// One call per kernel READDIR request (one reply buffer of entries), each delayed once, like
// one NFS READDIR RPC per batch. Each entry carries st_ino and the file type so readdir()
// callers get d_ino/d_type without a stat.
int OpReaddir(const char*, void* buf, fuse_fill_dir_t filler, off_t offset,
              struct fuse_file_info* fi, enum fuse_readdir_flags) {
  S().stats.readdir.fetch_add(1, std::memory_order_relaxed);
  MetaDelay();
  auto* d = reinterpret_cast<DirHandle*>(static_cast<uintptr_t>(fi->fh));
  if (offset != d->offset) {
    seekdir(d->dp, offset);
    d->entry = nullptr;
    d->offset = offset;
  }
  bool any = false;
  for (;;) {
    if (d->entry == nullptr) {
      errno = 0;
      d->entry = readdir(d->dp);
      if (d->entry == nullptr) {
        if (errno != 0 && !any) return -errno;
        break;
      }
    }
    struct stat st;
    memset(&st, 0, sizeof st);
    st.st_ino = d->entry->d_ino;
    if (d->entry->d_type != DT_UNKNOWN) {
      st.st_mode = static_cast<mode_t>(DTTOIF(d->entry->d_type));
    } else {
      // Some file systems do not report types; look it up so the kernel still gets d_type.
      struct stat full;
      if (fstatat(dirfd(d->dp), d->entry->d_name, &full, AT_SYMLINK_NOFOLLOW) == 0) {
        st.st_mode = full.st_mode & S_IFMT;
      }
    }
    off_t next = telldir(d->dp);
    if (filler(buf, d->entry->d_name, &st, next, static_cast<enum fuse_fill_dir_flags>(0))) {
      break;  // reply buffer full; d->entry is sent first next time
    }
    any = true;
    d->entry = nullptr;
    d->offset = next;
  }
  return 0;
}

int OpReleasedir(const char*, struct fuse_file_info* fi) {
  auto* d = reinterpret_cast<DirHandle*>(static_cast<uintptr_t>(fi->fh));
  closedir(d->dp);
  delete d;
  return 0;
}

int OpStatfs(const char*, struct statvfs* sv) {
  return fstatvfs(S().root.get(), sv) == -1 ? -errno : 0;
}

// Not delayed (NFSv3 has no xattrs; tools that copy them would otherwise pay a round trip per
// file on every mount). The root goes through the descriptor itself: the /proc link is a symlink
// that lgetxattr would not follow.
int OpGetxattr(const char* path, const char* name, char* value, size_t size) {
  ssize_t n = strcmp(Rel(path), ".") == 0 ? fgetxattr(S().root.get(), name, value, size)
                                          : lgetxattr(ProcPath(path).c_str(), name, value, size);
  return n == -1 ? -errno : static_cast<int>(n);
}

int OpListxattr(const char* path, char* list, size_t size) {
  ssize_t n = strcmp(Rel(path), ".") == 0 ? flistxattr(S().root.get(), list, size)
                                          : llistxattr(ProcPath(path).c_str(), list, size);
  return n == -1 ? -errno : static_cast<int>(n);
}

// Modifying operations: all EROFS.

int OpMknod(const char*, mode_t, dev_t) { return Erofs(); }
int OpMkdir(const char*, mode_t) { return Erofs(); }
int OpUnlink(const char*) { return Erofs(); }
int OpRmdir(const char*) { return Erofs(); }
int OpSymlink(const char*, const char*) { return Erofs(); }
int OpRename(const char*, const char*, unsigned int) { return Erofs(); }
int OpLink(const char*, const char*) { return Erofs(); }
int OpChmod(const char*, mode_t, struct fuse_file_info*) { return Erofs(); }
int OpChown(const char*, uid_t, gid_t, struct fuse_file_info*) { return Erofs(); }
int OpTruncate(const char*, off_t, struct fuse_file_info*) { return Erofs(); }
int OpWrite(const char*, const char*, size_t, off_t, struct fuse_file_info*) { return Erofs(); }
int OpSetxattr(const char*, const char*, const char*, size_t, int) { return Erofs(); }
int OpRemovexattr(const char*, const char*) { return Erofs(); }
int OpCreate(const char*, mode_t, struct fuse_file_info*) { return Erofs(); }
int OpUtimens(const char*, const struct timespec[2], struct fuse_file_info*) { return Erofs(); }
int OpFallocate(const char*, int, off_t, off_t, struct fuse_file_info*) { return Erofs(); }
ssize_t OpCopyFileRange(const char*, struct fuse_file_info*, off_t, const char*,
                        struct fuse_file_info*, off_t, size_t, int) {
  return Erofs();
}

}  // namespace

fuse_operations MakeOps() {
  struct fuse_operations ops;
  memset(&ops, 0, sizeof ops);
  ops.init = OpInit;
  ops.getattr = OpGetattr;
  ops.readlink = OpReadlink;
  ops.open = OpOpen;
  ops.read = OpRead;
  ops.release = OpRelease;
  ops.lseek = OpLseek;
  ops.opendir = OpOpendir;
  ops.readdir = OpReaddir;
  ops.releasedir = OpReleasedir;
  ops.statfs = OpStatfs;
  ops.getxattr = OpGetxattr;
  ops.listxattr = OpListxattr;
  ops.mknod = OpMknod;
  ops.mkdir = OpMkdir;
  ops.unlink = OpUnlink;
  ops.rmdir = OpRmdir;
  ops.symlink = OpSymlink;
  ops.rename = OpRename;
  ops.link = OpLink;
  ops.chmod = OpChmod;
  ops.chown = OpChown;
  ops.truncate = OpTruncate;
  ops.write = OpWrite;
  ops.setxattr = OpSetxattr;
  ops.removexattr = OpRemovexattr;
  ops.create = OpCreate;
  ops.utimens = OpUtimens;
  ops.fallocate = OpFallocate;
  ops.copy_file_range = OpCopyFileRange;
  return ops;
}

std::string StatsText(const Stats& s) {
  return fmt::format(
      "requests: getattr/lookup={} open={} opendir={} readdir={} readlink={} read={} ({} bytes) "
      "erofs={}",
      s.getattr.load(), s.open.load(), s.opendir.load(), s.readdir.load(), s.readlink.load(),
      s.read.load(), s.read_bytes.load(), s.erofs.load());
}

}  // namespace ds::slowfs
