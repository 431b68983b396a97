// A clone's test files (bench/io/clone_files.h).
#include "bench/io/clone_files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "src/system_probe.h"

namespace ds::bench {

Result<OwnedFd> OpenTestFile(const IoJobOptions& o, const std::string& file) {
  int flags = (Writes(o.rw) || Trims(o.rw) ? O_RDWR : O_RDONLY) | (o.direct ? O_DIRECT : 0);
  auto fd = OpenFile(file, flags);
  if (fd.ok() && Trims(o.rw)) {
    struct stat st;
    if (::fstat(fd->get(), &st) != 0 || !S_ISBLK(st.st_mode)) {
      return Status(Code::kInvalidArgument,
                    fmt::format("{}: not a block device; rw={} discards blocks with BLKDISCARD, "
                                "which only a block device takes (fio's trim fails here too); "
                                "give `filename=/dev/...` with `allow_device`",
                                file, RwName(o.rw)));
    }
  }
  if (fd.ok() || !o.direct || fd.status().err() != EINVAL) return fd;
  struct statfs sf;
  std::string fs =
      ::statfs(file.c_str(), &sf) == 0 ? FsTypeName(static_cast<uint64_t>(sf.f_type)) : "?";
  return Status(
      Code::kInvalidArgument,
      fmt::format("{}: this file system ({}) refuses O_DIRECT; use `direct=0`", file, fs));
}

}  // namespace ds::bench
