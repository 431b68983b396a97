// WebDataset tar shards (docs/formats/wds.md): POSIX tar, the members of a sample adjacent, and a
// last member `__dspack_index__` (which WebDataset's readers skip) that gives O(1) random access
// with no sidecar: 16-byte entries {begin, end} per sample and a 32-byte trailer that ends where
// the tar's two zero end blocks begin.
//
// The reader takes that index when it is intact and consistent, and otherwise (foreign tars, a
// truncated shard) scans the headers once: ustar, pax ('x', 'g') and GNU long names ('L') are
// understood; non-regular members are ignored. A key that reappears after another key began (a
// non-adjacent sample) is reported with both offsets.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "formats/layout.h"

namespace ds::wds {

inline constexpr const char* kIndexMember = "__dspack_index__";
inline constexpr const char* kIndexSidecarExt = ".dsidx";  // WdsOptions::index_sidecar
inline constexpr char kIndexMagic[8] = {'D', 'S', 'P', 'K', 'W', 'I', 'X', '1'};
inline constexpr uint64_t kTrailerSize = 32;
inline constexpr uint64_t kBlock = 512;

Result<std::unique_ptr<LayoutWriter>> CreateWriter(const std::string& out,
                                                   const WriterOptions& options);
Result<std::unique_ptr<LayoutReader>> Open(const StorageRef& at,
                                           const std::set<std::string>* present = nullptr);

}  // namespace ds::wds
