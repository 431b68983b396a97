// Sync: stage SRC into DST (docs/dssync.md). The steps, in order:
//   1. refuse DST inside SRC or SRC inside DST; resolve rank/world; plan (sync/plan.h) and pick
//      this rank's shards (SyncOptions::assign), then the --max-bytes / --fraction prefix;
//      metadata files are always staged;
//   2. staging directory T = DST, or DST/<version_name>; remove T/.dssync-ready (T is about to
//      change); open the journal T/.dssync-journal;
//   3. skip unchanged files: same size and mtime in T (or, with checksum, same size and XXH3);
//   4. space check: the bytes to copy against statvfs(T) (kNoSpace "need X, have Y");
//   5. copy (sync/copier.h); 6. write T/.dssync-manifest.json;
//   7. with del, remove files (and then empty directories) under T that SRC no longer holds,
//      never following symlinks and never touching dssync's own .dssync-* files at T's top;
//   8. only when no file failed: remove the journal, write T/.dssync-ready, and with a
//      version_name point DST/current at it (symlink under a tmp name + rename).
// Per-file failures do not stop other files; they are returned in SyncReport::errors. A Status
// is returned for what stops the run before any copy (usage, space, unreadable SRC).
//
// Thread-safety: one Sync per staging directory at a time (not locked).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "formats/shard_assignment.h"
#include "src/status.h"
#include "sync/copier.h"
#include "sync/fanout.h"
#include "sync/plan.h"

namespace ds::sync {

struct SyncOptions {
  std::string src, dst;
  int threads = 16;
  uint64_t chunk_size = kDefaultChunk;
  bool direct = false;
  bool checksum = false;
  bool del = false;
  bool follow_symlinks = false;
  uint64_t bwlimit = 0;  // bytes/s, 0 = unlimited
  std::optional<uint32_t> rank, world;
  // How shards go to ranks (formats/shard_assignment.h): by bytes (the default, as the Python
  // StreamDataset assigns them) or round robin.
  ShardPolicy assign = ShardPolicy::kBalancedBytes;
  std::optional<uint64_t> max_bytes;
  std::optional<double> fraction;
  std::string version_name;
  bool space_check = true;
  bool progress = false;
  std::function<void(const std::string&)> warn;  // one-line warnings
  // Where SRC and DST live (src/storage.h); null: the local backend. Tests hand a FaultStorage
  // or CountingStorage here; the planner, the copier, the committer and the journal go through
  // them.
  std::shared_ptr<Storage> src_storage, dst_storage;
  // dssync --fanout under MPI (sync/fanout.h): every rank stages every file (no rank split),
  // and only rank 0 reads SRC's data. Null: the normal copy.
  Job* fanout = nullptr;
};

struct SyncReport {
  std::string target;    // the staging directory
  std::string manifest;  // "manifest.json", "dspack.json" or ""
  RankWorld rank;
  uint64_t shards_total = 0, shards_assigned = 0, shards_staged = 0;
  uint64_t assigned_bytes = 0, staged_shard_bytes = 0;
  bool subset = false;
  uint64_t files = 0, bytes = 0;  // copied in this run
  uint64_t skipped_unchanged = 0, recopied = 0, verified = 0, resumed_bytes = 0, deleted = 0;
  double seconds = 0;
  std::vector<Status> errors;
};

Result<SyncReport> Sync(const SyncOptions& options);

}  // namespace ds::sync
