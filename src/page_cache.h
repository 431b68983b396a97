// Page-cache control of local files, in one place (issue 28 §4): eviction, a system-wide drop and
// residency. Callers reach it through the storage interface (Storage::EvictCache and
// Storage::CachedFraction, src/storage.h: a remote backend has no page cache of ours to drop
// and says so) or, where they hold a local fd already (dsbench io's test files, dssync's
// copier), directly.
//
//   EvictPages       posix_fadvise(DONTNEED) over a range (as fio's invalidate=1); with
//                    `writeback`, fdatasync first, because dirty or under-writeback pages
//                    survive DONTNEED. Advice: errors are ignored, as the kernel may decline.
//   DropAllCaches    sync + "3" into /proc/sys/vm/drop_caches: root only; false when refused.
//   ResidentPages    mincore over a temporary read-only mapping: pages cached of pages held.
// Thread-safety: pure functions on the caller's fds.
#pragma once

#include <cstdint>
#include <string>

#include "src/status.h"

namespace ds {

// len 0: to the end of the file.
void EvictPages(int fd, uint64_t offset = 0, uint64_t len = 0, bool writeback = false);

bool DropAllCaches();

struct PageResidency {
  uint64_t pages = 0;
  uint64_t resident = 0;
};
// `size` is the file's; `name` names it in errors. An empty file holds no pages.
Result<PageResidency> ResidentPages(int fd, uint64_t size, const std::string& name);

}  // namespace ds
