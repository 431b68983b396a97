#include "src/page_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <vector>

namespace ds {

void EvictPages(int fd, uint64_t offset, uint64_t len, bool writeback) {
  if (writeback) (void)::fdatasync(fd);
  (void)::posix_fadvise(fd, static_cast<off_t>(offset), static_cast<off_t>(len),
                        POSIX_FADV_DONTNEED);
}

bool DropAllCaches() {
  ::sync();
  std::ofstream f("/proc/sys/vm/drop_caches");
  f << "3\n";
  f.flush();
  return static_cast<bool>(f);
}

Result<PageResidency> ResidentPages(int fd, uint64_t size, const std::string& name) {
  static const long kPage = ::sysconf(_SC_PAGESIZE);
  PageResidency r;
  if (size == 0) return r;
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return Status::FromErrno(errno, "mmap " + name);
  r.pages = (size + kPage - 1) / kPage;
  std::vector<unsigned char> vec(r.pages);
  int rc = ::mincore(p, size, vec.data());
  int err = errno;
  ::munmap(p, size);
  if (rc != 0) return Status::FromErrno(err, "mincore " + name);
  for (unsigned char v : vec) r.resident += v & 1;
  return r;
}

}  // namespace ds
