// CopyFiles: the parallel read + hash + write engine of dssync (docs/dssync.md, "How a file is
// copied").
//
// Each file is cut into chunks of `chunk_size` bytes. With at least `threads` files, one task
// per file copies its chunks in order (many files in flight, the whole-file hash computed
// inline); with fewer files than threads, every (file, chunk) is a task of its own, so the
// chunks of a large file are copied in parallel. Tasks run on `threads` plain threads in plan
// order. Every file is reached through the storage interface (src/storage.h): the source through
// CopyOptions::src_storage, DST through dst_storage. A chunk is read in pieces of kBufferSize:
// from a source with local fds through the worker's IO engine (src/io_engine.h: io_uring, psync
// where refused), the next piece in flight while the current one is hashed (XXH3-64) and
// written; from any other source through its own reads. Pieces are written with WriteAt into
// DST/<dir>/.dssync-tmp.<name> (Allocate'd to the full size when opened; through OpenDirect with
// `direct` where the file system allows it); the source range is then dropped from the page
// cache (Advice::kDontNeed). When a file's last chunk lands, the worker that wrote it finishes
// the file:
//   - the whole-file XXH3-64: computed inline when one task copied the file, else (chunks
//     copied in parallel) by a re-read of the tmp file;
//   - Stat of the source: a size or mtime different from the plan's means the file changed
//     during the copy;
//   - a changed source or a hash that disagrees with expected_xxh3 is copied once more from
//     scratch; if it still fails the file is reported (kBadInput "changed during copy", or
//     kCorruption "xxh3 mismatch"), its tmp file removed, nothing put under its final name;
//   - otherwise the tmp file gets the source's mode and mtime (SetAttributes; synced here where
//     DST's storage lacks caps().sync_all) and is handed to the committer, which makes batches
//     durable (one SyncAll: syncfs(2) locally), renames them to their final names and records
//     them in the journal.
// Files of more than one chunk record each chunk in the journal (synced); a later run
// reuses a chunk of the tmp file when its journal entry matches the source's size, mtime and
// range and the tmp bytes still hash to the recorded value.
// A kNoSpace or kIOError on DST stops the whole run (remaining files report "not copied"). A
// failed read of SRC fails that file alone (kBadInput, naming it and the offset).
//
// Thread-safety: one call runs its own threads; the options' pointees must be thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/status.h"
#include "src/storage.h"
#include "sync/journal.h"
#include "sync/plan.h"
#include "sync/token_bucket.h"

namespace ds::sync {

inline constexpr const char* kTmpPrefix = ".dssync-tmp.";
inline constexpr uint64_t kDefaultChunk = 64ull << 20;
inline constexpr size_t kBufferSize = 4 << 20;
inline constexpr uint64_t kChunkAlign = 4096;  // O_DIRECT writes land on chunk boundaries

// kInvalidArgument naming the field when chunk_size is 0 or not a multiple of kChunkAlign.
Status ValidateChunkSize(uint64_t chunk_size);

struct CopyOptions {
  std::string dst;  // the staging directory; every file's directory already exists
  // Where PlanFile::src_path and dst live (src/storage.h); null: the local backend. A source
  // with local fds is read through the worker's IO engine; any other through its own reads.
  std::shared_ptr<Storage> src_storage, dst_storage;
  int threads = 16;
  uint64_t chunk_size = kDefaultChunk;  // a positive multiple of kChunkAlign (Validate)
  bool direct = false;
  TokenBucket* bucket = nullptr;  // may be null: unlimited
  Journal* journal = nullptr;     // REQUIRES: not null
  // Journal entries of earlier runs, by path (chunk entries only are used).
  const std::map<std::string, std::vector<JournalEntry>>* previous = nullptr;
  std::atomic<uint64_t>* files_done = nullptr;  // may be null; progress counters
  std::atomic<uint64_t>* bytes_done = nullptr;
};

struct CopyResult {
  std::string rel;
  uint64_t size = 0;  // what was committed (the source may have changed since the plan)
  int64_t mtime_ns = 0;
  uint64_t xxh3 = 0;
  bool recopied = false;
  bool verified = false;       // matched the manifest's hash
  uint64_t resumed_bytes = 0;  // reused from an interrupted run's tmp file
  Status status;
};

// Results are in the order of `files`. Options that fail ValidateChunkSize, or threads < 1, fail
// every file with that error, before anything is copied.
std::vector<CopyResult> CopyFiles(const std::vector<PlanFile>& files, const CopyOptions& options);

// The tmp name of a relative path: "a/b/.dssync-tmp.c" for "a/b/c".
std::string TmpRel(const std::string& rel);

}  // namespace ds::sync
