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

#include "src/job.h"
#include "src/status.h"

namespace ds {

class SampleSource;

// Shards [first[r], first[r+1]) go to process r: contiguous, by bytes (shard_bytes[k] is shard
// k's), so each process writes about total / n. first has n + 1 entries, first[n] = shards.
std::vector<uint64_t> AssignShardRanges(const std::vector<uint64_t>& shard_bytes, int n);

// Collective: the size of every file of source.tree(), on every process. Process r sizes the
// files [r, r+1) x count / N for the plan, and stats the next process's share too: a file whose
// size or mtime differs between the two (the ranks see different versions of SRC) fails the
// step, naming it. `threads` threads stat (SampleSource::StatFile); a file that cannot be stat'd
// fails the step on that rank.
Result<std::vector<uint64_t>> SizeFiles(Job& job, const SampleSource& source, int threads);

}  // namespace ds
