#include "src/fd.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>

namespace ds {

void OwnedFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Result<OwnedFd> OpenFile(const std::string& path, int flags, mode_t mode) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  if (fd < 0) return Status::FromErrno(errno, path);
  return OwnedFd(fd);
}

Result<OwnedFd> OpenFileAt(int dirfd, const std::string& name, int flags, mode_t mode) {
  int fd = ::openat(dirfd, name.c_str(), flags | O_CLOEXEC, mode);
  if (fd < 0) return Status::FromErrno(errno, name);
  return OwnedFd(fd);
}

Status ReadFullAt(int fd, void* buf, size_t n, uint64_t offset, std::string_view what) {
  iovec one{buf, n};
  return ReadFullAtV(fd, &one, 1, offset, what);
}

Status ReadFullAtV(int fd, iovec* iov, size_t count, uint64_t offset, std::string_view what) {
  size_t total = 0;
  for (size_t i = 0; i < count; i++) total += iov[i].iov_len;
  size_t done = 0, first = 0;
  while (done < total) {
    int cnt = static_cast<int>(std::min<size_t>(count - first, IOV_MAX));
    ssize_t r = ::preadv(fd, iov + first, cnt, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(
          errno, std::string(what) + ": read at offset " + std::to_string(offset + done),
          Code::kBadInput);
    }
    if (r == 0) {
      return Status(Code::kCorruption, std::string(what) + ": truncated: wanted " +
                                           std::to_string(total) + " bytes at offset " +
                                           std::to_string(offset) + ", file ends at " +
                                           std::to_string(offset + done));
    }
    done += static_cast<size_t>(r);
    // Skip the buffers filled; trim the one a short read stopped in.
    for (auto n = static_cast<size_t>(r); n > 0 && first < count;) {
      size_t k = std::min(n, iov[first].iov_len);
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + k;
      iov[first].iov_len -= k;
      n -= k;
      if (iov[first].iov_len == 0) first++;
    }
    while (first < count && iov[first].iov_len == 0) first++;
  }
  return Status::Ok();
}

Result<size_t> ReadUpTo(int fd, void* buf, size_t n, std::string_view what) {
  auto* p = static_cast<char*>(buf);
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::read(fd, p + done, n - done);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, std::string(what) + ": read", Code::kBadInput);
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return done;
}

Status WriteFull(int fd, const void* buf, size_t n, std::string_view what) {
  auto* p = static_cast<const char*>(buf);
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::write(fd, p + done, n - done);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, std::string(what) + ": write");
    }
    done += static_cast<size_t>(r);
  }
  return Status::Ok();
}

Status WriteFullAt(int fd, const void* buf, size_t n, uint64_t offset, std::string_view what) {
  auto* p = static_cast<const char*>(buf);
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pwrite(fd, p + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(
          errno, std::string(what) + ": write at offset " + std::to_string(offset + done));
    }
    done += static_cast<size_t>(r);
  }
  return Status::Ok();
}

Result<uint64_t> FileSize(int fd, std::string_view what) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return Status::FromErrno(errno, std::string(what) + ": fstat");
  return static_cast<uint64_t>(st.st_size);
}

Status FsyncDir(const std::string& dir) {
  DS_ASSIGN_OR_RETURN(OwnedFd fd, OpenFile(dir, O_RDONLY | O_DIRECTORY));
  if (::fsync(fd.get()) != 0) return Status::FromErrno(errno, dir + ": fsync");
  return Status::Ok();
}

Result<std::string> ReadWholeFile(const std::string& path) {
  DS_ASSIGN_OR_RETURN(OwnedFd fd, OpenFile(path, O_RDONLY));
  DS_ASSIGN_OR_RETURN(uint64_t size, FileSize(fd.get(), path));
  std::string out(size, '\0');
  DS_RETURN_IF_ERROR(ReadFullAt(fd.get(), out.data(), size, 0, path));
  return out;
}

static std::string DirOf(const std::string& path) {
  auto pos = path.rfind('/');
  if (pos == std::string::npos) return ".";
  if (pos == 0) return "/";
  return path.substr(0, pos);
}

namespace {

// Writes data into an existing non-regular file (FIFO, device, socket, or a link to one) in place,
// as fio writes its --output there: no temp file, no rename, no truncation.
Status WriteInPlace(const std::string& path, std::string_view data) {
  DS_ASSIGN_OR_RETURN(OwnedFd fd, OpenFile(path, O_WRONLY | O_NOCTTY));
  return WriteFull(fd.get(), data.data(), data.size(), path);
}

}  // namespace

std::string TempNameFor(const std::string& path) {
  static constexpr char kAlnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng(std::random_device{}() ^
                                   (static_cast<uint64_t>(::getpid()) << 32));
  std::string t = path + ".";
  for (int i = 0; i < kTempTagLen; i++) t += kAlnum[rng() % (sizeof(kAlnum) - 1)];
  return t + ".tmp";
}

Result<OwnedFd> OpenScratchFile(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return Status::FromErrno(errno, "cannot spool in " + dir);
  return OwnedFd(fd);
}

Result<OwnedFd> CreateExclusiveTemp(const std::string& path, std::string* tmp) {
  for (int attempt = 0;; attempt++) {
    *tmp = TempNameFor(path);
    int fd = ::open(tmp->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0) return OwnedFd(fd);
    if (errno != EEXIST || attempt == 16) return Status::FromErrno(errno, *tmp);
  }
}

Status WriteFileAtomic(const std::string& path, std::string_view data) {
  std::string target = path;
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      // A link: write to what it points at, as fio does.
      if (::stat(path.c_str(), &st) != 0) {
        return Status::FromErrno(errno, path +
                                            ": a symbolic link whose target cannot be "
                                            "written; remove the link or point it at a file");
      }
      if (S_ISREG(st.st_mode)) {
        char* real = ::realpath(path.c_str(), nullptr);
        if (!real) return Status::FromErrno(errno, path + ": resolving the link");
        target = real;
        std::free(real);
      }
    }
    if (S_ISDIR(st.st_mode)) {
      return Status(Code::kInvalidArgument,
                    path + ": is a directory; give a file name for the output");
    }
    if (!S_ISREG(st.st_mode)) return WriteInPlace(path, data);
  } else if (errno != ENOENT) {
    return Status::FromErrno(errno, path);
  }
  // A regular file or a new name: a temp file only this call created (O_EXCL, a random name, so
  // a planted link or file is never followed or reused), fsync'd, then renamed over target.
  std::string tmp;
  {
    DS_ASSIGN_OR_RETURN(OwnedFd fd, CreateExclusiveTemp(target, &tmp));
    Status s = WriteFull(fd.get(), data.data(), data.size(), tmp);
    if (s.ok() && ::fsync(fd.get()) != 0) s = Status::FromErrno(errno, tmp + ": fsync");
    if (!s.ok()) {
      ::unlink(tmp.c_str());
      return s;
    }
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return Status::FromErrno(e, "rename " + tmp + " -> " + target);
  }
  return FsyncDir(DirOf(target));
}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    if (data_) ::munmap(data_, size_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

Result<MappedFile> MappedFile::Open(const std::string& path) {
  DS_ASSIGN_OR_RETURN(OwnedFd fd, OpenFile(path, O_RDONLY));
  DS_ASSIGN_OR_RETURN(uint64_t size, FileSize(fd.get(), path));
  MappedFile m;
  if (size == 0) return m;
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) return Status::FromErrno(errno, path + ": mmap");
  m.data_ = static_cast<uint8_t*>(p);
  m.size_ = size;
  return m;
}

}  // namespace ds
