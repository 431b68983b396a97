// The staging plan: what SRC holds, which files are shards and which are metadata, which shards
// this rank stages (docs/dssync.md, "Which shards a rank stages").
//
// BuildPlan walks SRC through the storage interface (one List per directory, which gives every
// entry's type, size and mtime; no symlinked directories followed; `threads` listings in
// flight) and classifies every entry:
//   - A dataset dspack wrote (ListDatasetFiles in formats/layout.h finds its metadata): the
//     shards are the files its metadata lists, in that order, each with its XXH3-64; every other
//     file is metadata, with the hash the metadata records for it where it records one.
//   - Otherwise (any directory tree) metadata files are those IsLayoutMetadataName names; all
//     other files are shards, in byte-wise sorted order of their relative paths.
//   - Symlinks: to a regular file inside SRC, copied as that file; to anything outside SRC,
//     skipped with a warning unless follow_symlinks (then a regular target is copied); to a
//     directory, skipped with a warning; dangling, an error. FIFOs, sockets and devices are
//     errors ("unreadable"). Names starting with ".dssync-" are dssync's own and never listed.
// Entry errors do not stop the walk; they are returned in Plan::errors (exit 1).
//
// The assignment: ds::AssignShards (formats/shard_assignment.h), by bytes (SyncOptions::assign;
// round robin on request). PrefixSubset keeps the first shards of an
// assignment whose cumulative size fits a byte budget.
//
// Thread-safety: pure functions and values.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "src/status.h"
#include "src/storage.h"

namespace ds::sync {

struct PlanFile {
  std::string rel;       // relative path in SRC and DST
  std::string src_path;  // what to open (a followed symlink's target)
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  mode_t mode = 0644;
  std::string version;  // FileInfo::version as listed (s3://: the ETag); the copier opens that
  bool meta = false;
  std::optional<uint64_t> expected_xxh3;  // from the dataset's manifest
};

struct Plan {
  std::string manifest;  // "manifest.json", "dspack.json" or "" (a plain tree)
  std::vector<PlanFile> shards;
  std::vector<PlanFile> meta;
  std::set<std::string> all;  // every relative path SRC holds (for --delete)
  std::vector<std::string> dirs;
  std::vector<std::string> warnings;
  std::vector<Status> errors;
};

struct PlanOptions {
  bool follow_symlinks = false;
  int threads = 16;  // directory listings in flight
  // Where SRC lives (src/storage.h); null: the local backend. Tests hand a Counting or
  // FaultStorage here.
  std::shared_ptr<Storage> storage;
};

// kNotFound / kInvalidArgument when SRC is not a readable directory; kCorruption when its
// manifest is malformed.
Result<Plan> BuildPlan(const std::string& src, const PlanOptions& options);

bool IsMetadataName(std::string_view rel);

// What the plan's listing said of f, for Storage::OpenListed: the copy reads that version of the
// file (s3://: its ETag) or fails with ESTALE.
FileInfo ListedInfo(const PlanFile& f);

// st_mtim in nanoseconds since the epoch: how dssync compares and records mtimes.
int64_t MtimeNs(const struct stat& st);

struct Subset {
  size_t shards = 0;
  uint64_t bytes = 0;
};
// The longest prefix of `sizes` whose sum is <= max_bytes.
Subset PrefixSubset(const std::vector<uint64_t>& sizes, uint64_t max_bytes);

struct RankWorld {
  uint32_t rank = 0;
  uint32_t world = 1;
  std::string source;  // "--rank/--world", "SLURM_PROCID/SLURM_NTASKS", ... or "default"
};
// Explicit values win; otherwise SLURM_PROCID/SLURM_NTASKS, OMPI_COMM_WORLD_RANK/
// OMPI_COMM_WORLD_SIZE, RANK/WORLD_SIZE, in that order, read through `getenv`.
// kInvalidArgument when a value is not a number or rank >= world.
Result<RankWorld> ResolveRank(std::optional<uint32_t> rank, std::optional<uint32_t> world,
                              const std::function<const char*(const char*)>& getenv);

// kInvalidArgument when DST is SRC, inside SRC, or SRC is inside DST (after realpath of the
// existing part of each).
Status CheckDisjoint(const std::string& src, const std::string& dst);

}  // namespace ds::sync
