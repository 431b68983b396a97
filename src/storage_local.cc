// The local backend of src/storage.h: POSIX files under any path the process can reach.
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>  // renameat2
#include <filesystem>
#include <thread>
#include <vector>

#include "src/dir_lock.h"
#include "src/fd.h"
#include "src/storage.h"

namespace ds {
namespace {

// Enough reads in flight to keep an NVMe queue busy (the io_uring engine's default depth).
constexpr unsigned kLocalInflight = 64;
// List stats a directory's entries with one thread per kListStatsPerThread entries, up to
// kListThreads: on a network or FUSE file system each stat is a round trip (the local stand-in
// for READDIRPLUS, which returns the attributes with the names).
constexpr size_t kListStatsPerThread = 64;
constexpr size_t kListThreads = 16;
// Appends are gathered up to this much before a write(2).
constexpr size_t kLocalWriteBuffer = 1 << 20;

FileInfo InfoOf(const struct stat& st) {
  FileInfo info;
  if (S_ISREG(st.st_mode)) {
    info.type = FileType::kRegular;
  } else if (S_ISDIR(st.st_mode)) {
    info.type = FileType::kDirectory;
  } else if (S_ISLNK(st.st_mode)) {
    info.type = FileType::kSymlink;
  } else if (S_ISFIFO(st.st_mode)) {
    info.type = FileType::kFifo;
  } else if (S_ISSOCK(st.st_mode)) {
    info.type = FileType::kSocket;
  } else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    info.type = FileType::kDevice;
  }
  info.size = static_cast<uint64_t>(st.st_size);
  info.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  info.mode = st.st_mode & 07777;
  info.device = static_cast<uint64_t>(st.st_dev);
  info.inode = static_cast<uint64_t>(st.st_ino);
  return info;
}

class LocalFile final : public RandomAccessFile {
 public:
  LocalFile(OwnedFd fd, std::string name, uint64_t size)
      : fd_(std::move(fd)), name_(std::move(name)), size_(size) {}
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return size_; }
  int fd() const override { return fd_.get(); }
  void Advise(Advice advice, uint64_t offset, uint64_t len) const override {
    if (advice == Advice::kDontNeed) {
      EvictPages(fd_.get(), offset, len);
    } else {
      (void)::posix_fadvise(fd_.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
    }
  }
  Status ReadAtV(iovec* iov, size_t count, uint64_t offset, std::string_view what) const override {
    return ReadFullAtV(fd_.get(), iov, count, offset,
                       what.empty() ? std::string_view(name_) : what);
  }

  Result<size_t> ReadSome(uint64_t offset, void* buf, size_t n) const override {
    auto* p = static_cast<char*>(buf);
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(fd_.get(), p + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) {
        return Status::FromErrno(errno, fmt::format("{}: read at offset {}", name_, offset + done),
                                 Code::kBadInput);
      }
      if (r == 0) break;
      done += static_cast<size_t>(r);
    }
    return done;
  }

 private:
  OwnedFd fd_;
  std::string name_;
  uint64_t size_;
};

class LocalWritable final : public WritableFile {
 public:
  LocalWritable(OwnedFd fd, std::string name, std::string tmp)
      : fd_(std::move(fd)), name_(std::move(name)), tmp_(std::move(tmp)) {}
  ~LocalWritable() override {
    if (!committed_) ::unlink(tmp_.c_str());
  }
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return size_; }

  Status Append(std::string_view data) override {
    size_ += data.size();
    if (buf_.size() + data.size() < kLocalWriteBuffer) {
      buf_.append(data);
      return Status::Ok();
    }
    DS_RETURN_IF_ERROR(Flush());
    return WriteFull(fd_.get(), data.data(), data.size(), tmp_);
  }

  Status Sync() override {
    DS_RETURN_IF_ERROR(Flush());
    if (::fsync(fd_.get()) != 0) return Status::FromErrno(errno, tmp_ + ": fsync");
    return Status::Ok();
  }

  Status Commit() override {
    if (committed_) return Status(Code::kInternal, name_ + ": committed twice");
    DS_RETURN_IF_ERROR(Sync());
    fd_.reset();
    if (::rename(tmp_.c_str(), name_.c_str()) != 0) {
      return Status::FromErrno(errno, fmt::format("{}: rename from {}", name_, tmp_));
    }
    committed_ = true;
    auto slash = name_.rfind('/');
    return FsyncDir(slash == std::string::npos ? "." : slash == 0 ? "/" : name_.substr(0, slash));
  }

 private:
  Status Flush() {
    if (buf_.empty()) return Status::Ok();
    Status st = WriteFull(fd_.get(), buf_.data(), buf_.size(), tmp_);
    buf_.clear();
    return st;
  }

  OwnedFd fd_;
  std::string name_;
  std::string tmp_;
  std::string buf_;
  uint64_t size_ = 0;
  bool committed_ = false;
};

class LocalRandomWrite final : public RandomWriteFile {
 public:
  LocalRandomWrite(OwnedFd fd, std::string name) : fd_(std::move(fd)), name_(std::move(name)) {}
  const std::string& name() const override { return name_; }
  int fd() const override { return fd_.get(); }

  Status WriteAt(uint64_t offset, const void* data, size_t n) override {
    return WriteFullAt(fd_.get(), data, n, offset, name_);
  }

  Result<size_t> ReadSome(uint64_t offset, void* buf, size_t n) override {
    ssize_t r;
    do {
      r = ::pread(fd_.get(), buf, n, static_cast<off_t>(offset));
    } while (r < 0 && errno == EINTR);
    if (r < 0) return Status::FromErrno(errno, fmt::format("{}: read at offset {}", name_, offset));
    return static_cast<size_t>(r);
  }

  Result<uint64_t> Size() override { return FileSize(fd_.get(), name_); }

  Status Truncate(uint64_t size) override {
    if (::ftruncate(fd_.get(), static_cast<off_t>(size)) != 0) {
      return Status::FromErrno(errno, fmt::format("{}: truncate to {}", name_, size));
    }
    return Status::Ok();
  }

  Status Sync() override {
    if (::fsync(fd_.get()) != 0) return Status::FromErrno(errno, name_ + ": fsync");
    return Status::Ok();
  }

  Status Allocate(uint64_t size) override {
    if (size == 0) return Status::Ok();
    int r = ::posix_fallocate(fd_.get(), 0, static_cast<off_t>(size));
    // EOPNOTSUPP, EINVAL: the file system cannot reserve (the writes find out instead).
    if (r != 0 && r != EOPNOTSUPP && r != EINVAL) {
      return Status::FromErrno(r, fmt::format("{}: fallocate {} bytes", name_, size));
    }
    return Status::Ok();
  }

  Status SetAttributes(mode_t mode, int64_t mtime_ns) override {
    if (::fchmod(fd_.get(), mode) != 0) return Status::FromErrno(errno, name_ + ": chmod");
    struct timespec ts[2];
    ts[0].tv_sec = ts[1].tv_sec = mtime_ns / 1000000000;
    ts[0].tv_nsec = ts[1].tv_nsec = mtime_ns % 1000000000;
    if (::futimens(fd_.get(), ts) != 0) return Status::FromErrno(errno, name_ + ": futimens");
    return Status::Ok();
  }

  Status Close() override {
    int fd = fd_.release();
    if (fd >= 0 && ::close(fd) != 0) return Status::FromErrno(errno, name_ + ": close");
    return Status::Ok();
  }

 private:
  OwnedFd fd_;
  std::string name_;
};

class LocalLock final : public StorageLock {
 public:
  explicit LocalLock(OwnedFd fd) : fd_(std::move(fd)) {}

 private:
  OwnedFd fd_;
};

class Local final : public Storage {
 public:
  std::string_view scheme() const override { return "file"; }
  StorageCaps caps() const override {
    return StorageCaps{.mmap = true,
                       .atomic_rename = true,
                       .page_cache = true,
                       .exclusive_lock = true,
                       .max_inflight = kLocalInflight,
                       .local_fd = true,
                       .sync_all = true};
  }

  Result<std::unique_ptr<RandomAccessFile>> OpenRead(const std::string& path) override {
    DS_ASSIGN_OR_RETURN(OwnedFd fd, OpenFile(path, O_RDONLY));
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) return Status::FromErrno(errno, path);
    if (S_ISDIR(st.st_mode)) {
      return Status(Code::kBadInput, path + ": is a directory, not a file");
    }
    return std::unique_ptr<RandomAccessFile>(
        new LocalFile(std::move(fd), path, static_cast<uint64_t>(st.st_size)));
  }

  Result<std::unique_ptr<WritableFile>> Create(const std::string& path) override {
    std::string tmp;
    DS_ASSIGN_OR_RETURN(OwnedFd fd, CreateExclusiveTemp(path, &tmp));
    return std::unique_ptr<WritableFile>(new LocalWritable(std::move(fd), path, std::move(tmp)));
  }

  Result<std::unique_ptr<RandomWriteFile>> OpenWrite(const std::string& path,
                                                     WriteMode mode) override {
    int flags = O_RDWR | O_CREAT | O_CLOEXEC;
    if (mode == WriteMode::kCreateNew) flags |= O_EXCL;
    if (mode == WriteMode::kTruncate) flags |= O_TRUNC;
    DS_ASSIGN_OR_RETURN(OwnedFd fd, OpenFile(path, flags, 0644));
    return std::unique_ptr<RandomWriteFile>(new LocalRandomWrite(std::move(fd), path));
  }

  Result<std::unique_ptr<RandomWriteFile>> OpenDirect(const std::string& path) override {
    auto fd = OpenFile(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
    if (!fd.ok() && fd.status().err() == EINVAL) {  // the file system refuses O_DIRECT (tmpfs)
      return Status(Code::kUnsupported, fd.status().message(), EINVAL);
    }
    if (!fd.ok()) return fd.status();
    return std::unique_ptr<RandomWriteFile>(new LocalRandomWrite(std::move(*fd), path));
  }

  Status SyncDir(const std::string& dir) override { return FsyncDir(dir); }

  Status SyncAll(const std::string& dir) override {
    auto fd = OpenFile(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (!fd.ok()) return Status::FromErrno(fd.status().err(), dir + ": syncfs");
    if (::syncfs(fd->get()) != 0) return Status::FromErrno(errno, dir + ": syncfs");
    return Status::Ok();
  }

  Result<FileInfo> Stat(const std::string& path, bool follow) override {
    struct stat st;
    int rc = follow ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st);
    if (rc != 0) return Status::FromErrno(errno, path);
    return InfoOf(st);
  }

  Result<std::vector<DirEntry>> List(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return Status::FromErrno(errno, dir);
    std::unique_ptr<DIR, int (*)(DIR*)> guard(d, ::closedir);
    std::vector<DirEntry> names;
    for (;;) {
      errno = 0;  // readdir signals errors only through errno
      dirent* e = ::readdir(d);
      if (e == nullptr) {
        if (errno != 0) return Status::FromErrno(errno, dir + ": readdir");
        break;
      }
      std::string_view n = e->d_name;
      if (n != "." && n != "..") names.push_back(DirEntry{std::string(n), {}});
    }
    std::vector<int> err(names.size(), 0);
    auto stat_range = [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) {
        struct stat st;
        if (::fstatat(::dirfd(d), names[i].name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
          err[i] = errno;
        } else {
          names[i].info = InfoOf(st);
        }
      }
    };
    size_t threads = std::min(kListThreads, names.size() / kListStatsPerThread);
    if (threads <= 1) {
      stat_range(0, names.size());
    } else {
      std::vector<std::thread> pool;
      size_t per = (names.size() + threads - 1) / threads;
      for (size_t b = 0; b < names.size(); b += per) {
        pool.emplace_back(stat_range, b, std::min(names.size(), b + per));
      }
      for (auto& t : pool) t.join();
    }
    std::vector<DirEntry> out;
    out.reserve(names.size());
    for (size_t i = 0; i < names.size(); ++i) {
      if (err[i] == ENOENT) continue;  // removed since readdir: not there any more
      if (err[i] != 0) return Status::FromErrno(err[i], dir + "/" + names[i].name);
      out.push_back(std::move(names[i]));
    }
    return out;
  }

  Status MakeDirs(const std::string& dir) override {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return Status::FromErrno(ec.value(), dir + ": mkdir");
    return Status::Ok();
  }

  Status Remove(const std::string& path) override {
    if (::remove(path.c_str()) != 0) return Status::FromErrno(errno, path + ": remove");
    return Status::Ok();
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return Status::FromErrno(errno, fmt::format("{}: rename to {}", from, to));
    }
    return Status::Ok();
  }
  Status Exchange(const std::string& a, const std::string& b) override {
    if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0) {
      return Status::Ok();
    }
    int err = errno;
    Status s = Status::FromErrno(err, fmt::format("{}: exchange with {}", a, b));
    // The file system cannot (EINVAL: not supported there; EXDEV: two file systems).
    if (err == EINVAL || err == ENOSYS || err == EXDEV || err == EOPNOTSUPP) {
      return Status(Code::kUnsupported, s.message(), err);
    }
    return s;
  }

  Result<std::unique_ptr<StorageLock>> LockWriter(const std::string& dir,
                                                  std::string* warning) override {
    DS_ASSIGN_OR_RETURN(OwnedFd fd, LockDirectory(dir, warning));
    return std::unique_ptr<StorageLock>(new LocalLock(std::move(fd)));
  }

  Status EvictCache(const std::string& path) override {
    DS_ASSIGN_OR_RETURN(OwnedFd fd, OpenFile(path, O_RDONLY));
    EvictPages(fd.get(), 0, 0, /*writeback=*/true);
    return Status::Ok();
  }

  Result<PageResidency> CachedPages(const std::string& path) override {
    DS_ASSIGN_OR_RETURN(OwnedFd fd, OpenFile(path, O_RDONLY));
    DS_ASSIGN_OR_RETURN(uint64_t size, FileSize(fd.get(), path));
    return ResidentPages(fd.get(), size, path);
  }
};

}  // namespace

std::unique_ptr<RandomAccessFile> LocalFileFromFd(OwnedFd fd, std::string name, uint64_t size) {
  return std::make_unique<LocalFile>(std::move(fd), std::move(name), size);
}

std::shared_ptr<Storage> LocalStorage() {
  static const std::shared_ptr<Storage> local = std::make_shared<Local>();
  return local;
}

}  // namespace ds
