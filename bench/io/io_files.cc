// The test files of `dsbench io` (bench/io/io_job.h: PrepareTestFile, LooksLikeJobFile).
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "bench/io/io_job.h"
#include "src/fd.h"
#include "src/human.h"
#include "src/random.h"

namespace ds::bench {

namespace {

// fio's fallocate, before the file is written: posix_fallocate (posix), fallocate(2) keeping
// the size (keep) or not (native, quietly none where the file system has no fallocate),
// ftruncate to the size (truncate), or nothing (none).
Status Preallocate(FallocateMode mode, int fd, uint64_t bytes, const std::string& path) {
  const auto len = static_cast<off_t>(bytes);
  int rc = 0;
  switch (mode) {
    case FallocateMode::kNone:
      return Status::Ok();
    case FallocateMode::kPosix:
      rc = ::posix_fallocate(fd, 0, len);
      break;
    case FallocateMode::kKeep:
      rc = ::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, len) ? errno : 0;
      break;
    case FallocateMode::kNative:
      rc = ::fallocate(fd, 0, 0, len) ? errno : 0;
      if (rc == EOPNOTSUPP) rc = 0;  // fio's native: no fallocate here, lay it out as is
      break;
    case FallocateMode::kTruncate:
      rc = ::ftruncate(fd, len) ? errno : 0;
      break;
  }
  if (rc == 0) return Status::Ok();
  if (rc == ENOSPC) {
    return Status(Code::kNoSpace, path + ": no space to preallocate the test file; lower `size`",
                  rc);
  }
  return Status::FromErrno(rc, path + ": fallocate (give fallocate=none where it is refused)");
}

// The mark dsbench leaves on the test files it lays out (a user xattr, where the file system
// keeps them), so that a later run (after --keep, or one that was killed) may write to them or
// lay them out again; a file without it is the user's.
constexpr const char* kOwnerXattr = "user.dsbench.testfile";

bool MarkedOurs(const std::string& path) {
  char v[8];
  return ::getxattr(path.c_str(), kOwnerXattr, v, sizeof v) >= 0;
}

// A test file that dsbench lays out (PATH is a directory, or fio's filename names a file that is
// not there yet, or one of dsbench's own that is too short): offset + size bytes of
// incompressible data, after a free-space check.
Result<TestFile> LayOut(const IoJobOptions& o, const std::string& dir, const std::string& path) {
  TestFile f{path, false};
  const uint64_t bytes = o.offset + o.size;
  struct statvfs vfs;
  if (::statvfs(dir.c_str(), &vfs) == 0) {
    uint64_t avail = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    if (avail < bytes) {
      return Status(Code::kNoSpace, fmt::format("{}: not enough free space for a {} test file "
                                                "({} free); lower `size`",
                                                dir, FormatBytes(bytes), FormatBytes(avail)));
    }
  }
  DS_ASSIGN_OR_RETURN(OwnedFd fd, OpenFile(f.path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
  f.created = true;
  (void)::fsetxattr(fd.get(), kOwnerXattr, "1", 1, 0);  // best effort: see kOwnerXattr
  if (Status s = Preallocate(o.fallocate, fd.get(), bytes, f.path); !s.ok()) {
    ::unlink(f.path.c_str());
    return s;
  }
  std::string buf(1 << 20, '\0');
  Rng rng(o.seed, 0xF11E);
  for (uint64_t done = 0; done < bytes;) {
    size_t k = static_cast<size_t>(std::min<uint64_t>(buf.size(), bytes - done));
    rng.Fill(buf.data(), k);  // incompressible
    Status s = WriteFull(fd.get(), buf.data(), k, f.path);
    if (!s.ok()) {
      ::unlink(f.path.c_str());
      return s;
    }
    done += k;
  }
  if (::fsync(fd.get()) != 0) {
    ::unlink(f.path.c_str());
    return Status::FromErrno(errno, f.path + ": fsync");
  }
  return f;
}

}  // namespace

bool LooksLikeJobFile(const std::string& path) {
  if (path.size() > 4 && path.compare(path.size() - 4, 4, ".fio") == 0) return true;
  OwnedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  struct stat st;
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  char buf[256];
  ssize_t n = ::pread(fd.get(), buf, sizeof buf, 0);
  for (ssize_t i = 0; i < n; i++) {
    if (buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\n' && buf[i] != '\r') return buf[i] == '[';
  }
  return false;
}

Result<TestFile> PrepareTestFile(IoJobOptions& o) {
  struct stat st;
  if (::stat(o.path.c_str(), &st) != 0) {
    const int err = errno;
    std::string parent = o.path.substr(0, o.path.find_last_of('/') + 1);
    if (err == ENOENT && o.create_file && !LooksLikeJobFile(o.path)) {
      if (o.size == 0) {
        return Status(Code::kInvalidArgument,
                      o.path + ": not there yet, and `size` is needed to create it");
      }
      return LayOut(o, parent.empty() ? "." : parent, o.path);
    }
    return Status::FromErrno(err, o.path + ": give an existing directory or file",
                             Code::kInvalidArgument);
  }
  TestFile f;
  if (S_ISREG(st.st_mode) && LooksLikeJobFile(o.path)) {
    return Status(Code::kInvalidArgument,
                  o.path +
                      ": a fio job file, never a test target; run its jobs with "
                      "`dsbench io " +
                      o.path + "`");
  }
  if (S_ISBLK(st.st_mode) && !o.allow_device) {
    return Status(Code::kInvalidArgument, o.path +
                                              ": a block device; dsbench refuses to touch "
                                              "one unless `allow_device` is given");
  }
  if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
    f.path = o.path;
    if (o.size == 0 && static_cast<uint64_t>(st.st_size) > o.offset)
      o.size = static_cast<uint64_t>(st.st_size) - o.offset;
    if (S_ISREG(st.st_mode) && Writes(o.rw) && !o.allow_overwrite) {
      return Status(Code::kInvalidArgument,
                    fmt::format("{}: an existing file that dsbench did not create; `rw` {} would "
                                "overwrite it. Give a directory (dsbench makes its own test "
                                "file there), or `allow_overwrite` to write into this file",
                                o.path, RwName(o.rw)));
    }
    if (S_ISREG(st.st_mode) && !Writes(o.rw) &&
        static_cast<uint64_t>(st.st_size) < o.offset + o.size) {
      return Status(
          Code::kInvalidArgument,
          o.offset ? fmt::format("{}: {} bytes, less than offset {} + `size` {}", o.path,
                                 st.st_size, o.offset, o.size)
                   : fmt::format("{}: {} bytes, less than `size` {}", o.path, st.st_size, o.size));
    }
    return f;
  }
  if (!S_ISDIR(st.st_mode))
    return Status(Code::kInvalidArgument, o.path + ": not a file or directory");
  if (o.size == 0)
    return Status(Code::kInvalidArgument, "`size` is needed when PATH is a directory");
  f.path = o.path + "/" + (o.file_name.empty() ? o.name + ".0.0" : o.file_name);
  struct stat fst;
  if (::stat(f.path.c_str(), &fst) == 0) {
    if (!S_ISREG(fst.st_mode)) return Status(Code::kInvalidArgument, f.path + ": not a file");
    if (LooksLikeJobFile(f.path)) {
      return Status(Code::kInvalidArgument, f.path + ": a fio job file, never a test target");
    }
    // As fio, an existing file of the job's name is reused: read as it is when it is long
    // enough. Writing to it, or laying it out again, is only for a file dsbench made.
    const bool long_enough = static_cast<uint64_t>(fst.st_size) >= o.offset + o.size;
    if (!o.allow_overwrite && (Writes(o.rw) || !long_enough) && !MarkedOurs(f.path)) {
      return Status(
          Code::kInvalidArgument,
          fmt::format("{}: an existing file that dsbench did not create; {} Remove it, give "
                      "another `name` or `directory`, or `allow_overwrite`",
                      f.path,
                      Writes(o.rw) ? fmt::format("`rw` {} would overwrite it.", RwName(o.rw))
                                   : fmt::format("it holds {} bytes, fewer than the {} the job "
                                                 "reads, and would be laid out again.",
                                                 fst.st_size, o.offset + o.size)));
    }
    if (long_enough) return f;
    DS_ASSIGN_OR_RETURN(TestFile again, LayOut(o, o.path, f.path));
    again.created = false;  // it was there before this run: never removed
    return again;
  }
  return LayOut(o, o.path, f.path);
}

}  // namespace ds::bench
