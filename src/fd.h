// RAII file handles and whole-buffer IO helpers.
//
// OwnedFd: a move-only owner of a file descriptor; closes on destruction.
// MappedFile: a move-only read-only mmap of a whole file (empty files map to nothing).
// All functions return Status with the path in the message; short reads at EOF are reported as
// kCorruption ("truncated") because callers only read what a format says must exist.
//
// Thread-safety: none of these types are internally synchronized; distinct objects may be used
// from different threads. ReadFullAt on one fd from many threads is safe (pread).
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "src/status.h"

namespace ds {

class OwnedFd {
 public:
  OwnedFd() = default;
  explicit OwnedFd(int fd) : fd_(fd) {}
  OwnedFd(OwnedFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  OwnedFd& operator=(OwnedFd&& o) noexcept {
    if (this != &o) reset(std::exchange(o.fd_, -1));
    return *this;
  }
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  ~OwnedFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// open(2) with O_CLOEXEC added; `what` names the file in errors (defaults to path).
Result<OwnedFd> OpenFile(const std::string& path, int flags, mode_t mode = 0644);
// openat(2) relative to dirfd.
Result<OwnedFd> OpenFileAt(int dirfd, const std::string& name, int flags, mode_t mode = 0644);

// Reads exactly n bytes at offset; EOF before n bytes is kCorruption "truncated".
Status ReadFullAt(int fd, void* buf, size_t n, uint64_t offset, std::string_view what);
// The same into count buffers (preadv), filled in order from offset; short reads continue. The
// iovecs are consumed (advanced past what was read).
Status ReadFullAtV(int fd, iovec* iov, size_t count, uint64_t offset, std::string_view what);
// Reads until n bytes or EOF from the current position; returns bytes read.
Result<size_t> ReadUpTo(int fd, void* buf, size_t n, std::string_view what);
Status WriteFull(int fd, const void* buf, size_t n, std::string_view what);
// Writes exactly n bytes at offset (pwrite; short writes and EINTR continue).
Status WriteFullAt(int fd, const void* buf, size_t n, uint64_t offset, std::string_view what);
Result<uint64_t> FileSize(int fd, std::string_view what);
// fsync of a directory, so that renames and creations in it are durable.
Status FsyncDir(const std::string& dir);
// Reads a whole (small) file into a string.
Result<std::string> ReadWholeFile(const std::string& path);
// Writes `data` to path, the way fio writes its --output:
// - a new name or a regular file: via a temp file this call creates (CreateExclusiveTemp) +
//   fsync + rename + fsync(dir): never a partial file under the final name;
// - a FIFO, a device or a socket (the pipe of /proc/self/fd/1 too): written in place, never
//   replaced by a regular file;
// - a symbolic link: its target, by the same rules (the link stays a link); a dangling link is
//   an error, and so is a directory.
Status WriteFileAtomic(const std::string& path, std::string_view data);
// A fresh temp name beside path: "path.XXXXXX.tmp", XXXXXX kTempTagLen random letters/digits.
inline constexpr int kTempTagLen = 6;
std::string TempNameFor(const std::string& path);
// Creates a temp file for path with O_CREAT|O_EXCL|O_NOFOLLOW under a fresh TempNameFor name
// (retrying on a name that exists), so a file or link planted at a predictable name is never
// opened. *tmp receives the name.
Result<OwnedFd> CreateExclusiveTemp(const std::string& path, std::string* tmp);
// An unnamed scratch file in the local directory dir (O_TMPFILE, read-write): it never has a
// name, and its blocks are freed when the fd is closed, crash or not. A spool, not a dataset
// file. Errors say "cannot spool in DIR".
Result<OwnedFd> OpenScratchFile(const std::string& dir);

class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(MappedFile&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  static Result<MappedFile> Open(const std::string& path);
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace ds
