// `dspack verify` for native datasets: checks every byte of every shard.
//
// Per shard: size and XXH3-64 of the whole file against the manifest (one sequential pass),
// then the structure (second pass, usually served by the page cache): header checksum, zero
// padding, footer and index checksums, and for each record its magic, header checksum, data
// checksum, length, trailing zero padding, and agreement with the global index. When the index
// is damaged, records are found by scanning from the first record position instead.
// The global index is checked against its manifest hash and against the shards' records
// (entries, and the key table as a multiset). classes.txt is checked against its hash.
//
// Each problem is one line naming file, offset and (when readable) the sample key.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "formats/layout.h"
#include "src/status.h"

namespace ds::native {

// The report and progress are every layout's (formats/layout.h): one verify, one report type.
// progress(records_done, bytes_done) is called from the calling thread.
using VerifyReport = LayoutVerifyReport;
using VerifyProgress = LayoutProgress;

// Verifies the dataset at at.path, every file read through at.storage. Returns non-OK only when
// verification cannot run (no manifest, unreadable directory); corruption is reported in
// report->problems.
Status VerifyDataset(const StorageRef& at, VerifyReport* report,
                     const VerifyProgress& progress = nullptr);
// The same for a local directory.
inline Status VerifyDataset(const std::string& dir, VerifyReport* report,
                            const VerifyProgress& progress = nullptr) {
  return VerifyDataset(StorageRef{LocalStorage(), dir}, report, progress);
}

}  // namespace ds::native
