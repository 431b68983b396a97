// A partitioned convert: `mpirun -n N dspack convert SRC OUT` (docs/mpi.md#partitioned-packing).
//
// Every process of the job scans SRC (a directory tree) and all check they listed the same
// files; the files are sized in N slices, one per process, and everyone gets every size. From
// the sizes every process computes the same shard plan (PartitionedWriter::PlanShards, the
// writer's own roll rule), and shard ranges are given to processes by bytes: process r writes
// the contiguous shards whose bytes fall in [r, r+1) x total / N (a process may get none). Rank
// 0 prepares OUT (replace, resume, lock) before anyone writes, gathers every part and commits.
// The output is byte-identical to a one-process convert for any N; `--resume` continues after
// any process was killed, with any N.
//
// What partitions: a directory-tree SRC into a layout whose writer is a PartitionedWriter
// (native, wds, tfrecord, recordio; not LMDB's one file), under --on-error fail (a skip
// would move every later shard boundary of the one-process output). Anything else is refused
// (kInvalidArgument) before any work.
//
// Failures: after each step every process learns whether all succeeded (Agree); a failed step
// returns the lowest failed rank's status, prefixed "rank R of N", on every process, so rank 0
// reports it and all exit with its code; each process removes what it made (a --resume run
// keeps it). A killed process is mpirun's to handle: it ends the job.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "src/status.h"

namespace ds {

class SampleSource;

// What a partitioned convert needs from the job (the CLI implements it over mpi/world.h; pack/
// never links MPI). Collective: every process calls it in the same order.
class PackJob {
 public:
  virtual ~PackJob() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every process's bytes, in rank order, on every process.
  virtual Result<std::vector<std::string>> AllGather(const std::string& mine,
                                                     std::string_view what) = 0;
  // Every process's bytes, in rank order, on rank 0; the others get an empty vector.
  virtual Result<std::vector<std::string>> Gather(const std::string& mine,
                                                  std::string_view what) = 0;
};

// Collective: OK on every process when `mine` is OK on all of them, else the lowest failed
// rank's status, its message prefixed "rank R of N: ".
Status AgreeOnStatus(PackJob& job, const Status& mine, std::string_view what);

// Collective: rank 0's `mine` on every process.
Result<std::string> FromRoot(PackJob& job, const std::string& mine, std::string_view what);

// Shards [first[r], first[r+1]) go to process r: contiguous, by bytes (shard_bytes[k] is shard
// k's), so each process writes about total / n. first has n + 1 entries, first[n] = shards.
std::vector<uint64_t> AssignShardRanges(const std::vector<uint64_t>& shard_bytes, int n);

// Collective: the size of every file of source.tree(), on every process. Process r sizes the
// files [r, r+1) x count / N for the plan, and stats the next process's share too: a file whose
// size or mtime differs between the two (the ranks see different versions of SRC) fails the
// step, naming it. `threads` threads stat (SampleSource::StatFile); a file that cannot be stat'd
// fails the step on that rank.
Result<std::vector<uint64_t>> SizeFiles(PackJob& job, const SampleSource& source, int threads);

}  // namespace ds
