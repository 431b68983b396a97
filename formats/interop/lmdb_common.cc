#include "formats/interop/lmdb_common.h"

#include <fcntl.h>
#include <fmt/format.h>

#include "formats/schema.h"
#include "src/checksum.h"
#include "src/fd.h"

namespace ds::lmdb {

Status MdbError(int rc, const std::string& what) {
  Code code = rc == MDB_CORRUPTED || rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH ||
                      rc == MDB_PAGE_NOTFOUND
                  ? Code::kCorruption
                  : Code::kIOError;
  return Status(code, fmt::format("{}: {}", what, mdb_strerror(rc)));
}

std::string SampleKey(uint64_t i) { return fmt::format("{:010d}", i); }

Sample ImageLabelSample(std::string key, std::string_view image, int64_t label) {
  return {std::move(key), {{kLmdbImage, std::string(image)}, {kLmdbLabel, std::to_string(label)}}};
}

Status HashFile(const std::string& path, uint64_t* size, uint64_t* hash) {
  DS_ASSIGN_OR_RETURN(OwnedFd fd, OpenFile(path, O_RDONLY));
  Xxh3Hasher h;
  std::string buf(4 << 20, '\0');
  *size = 0;
  for (;;) {
    DS_ASSIGN_OR_RETURN(size_t n, ReadUpTo(fd.get(), buf.data(), buf.size(), path));
    if (n == 0) break;
    h.Update(buf.data(), n);
    *size += n;
  }
  *hash = h.Digest();
  return Status::Ok();
}

}  // namespace ds::lmdb
