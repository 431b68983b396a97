// dssync --fanout: one read of the shared storage for many nodes (docs/mpi.md, "Fan-out
// staging"). Under MPI every rank stages the whole dataset into its own DST; rank 0 alone reads
// SRC, chunk by chunk, and hands each chunk to every rank (an MPI broadcast: mpiFileUtils'
// dbcast for a dataset), which writes it to its tmp file, hashes it, and commits the file as
// CopyFiles does (whole-file XXH3 against the dataset's manifest, mode and mtime, durable
// before its final name, through the same Committer and journal 'F' entries).
//
// All ranks walk the same files in plan order and make the same collectives on the job (src/job.h),
// so the collective order matches. Per file, ranks first agree whether anyone needs it (a rank
// whose copy is unchanged skips it; if no rank needs it, nobody reads it). Rank 0 then sends the
// file's chunks, and after the last one the file's verdict: "ok", or that it changed during
// the copy (fstat against the plan) or could not be read, which every rank reports for the
// file. Resume is per file: a rerun skips files already staged unchanged; partial chunks are
// not reused (no 'C' entries).
//
// Thread-safety: one thread (the job's collectives are called in order).
#pragma once

#include <string>
#include <vector>

#include "src/job.h"
#include "src/status.h"
#include "sync/copier.h"
#include "sync/plan.h"

namespace ds::sync {

// Copies `files` (the same list, in the same order, on every rank) for the ranks whose
// `needed[i]` is true; results come back for the needed files only, in order. Options as
// CopyFiles; `threads` are rank 0's reads in flight per chunk (bucket and previous are not
// used).
std::vector<CopyResult> FanoutCopy(const std::vector<PlanFile>& files,
                                   const std::vector<bool>& needed, const CopyOptions& options,
                                   Job* job);

}  // namespace ds::sync
