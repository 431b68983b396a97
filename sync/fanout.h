// dssync --fanout: one read of the shared storage for many nodes (docs/mpi.md, "Fan-out
// staging"). Under MPI every rank stages the whole dataset into its own DST; rank 0 alone reads
// SRC, chunk by chunk, and hands each chunk to every rank (an MPI broadcast: mpiFileUtils'
// dbcast for a dataset), which writes it to its tmp file, hashes it, and commits the file as
// CopyFiles does (whole-file XXH3 against the dataset's manifest, mode and mtime, durable
// before its final name, through the same Committer and journal 'F' entries).
//
// All ranks walk the same files in plan order and make the same calls on the channel, so the
// collective order matches. Per file, ranks first agree whether anyone needs it (a rank whose
// copy is unchanged skips it; if no rank needs it, nobody reads it). Rank 0 then sends the
// file's chunks, and after the last one the file's verdict: "ok", or that it changed during
// the copy (fstat against the plan) or could not be read, which every rank reports for the
// file. Resume is per file: a rerun skips files already staged unchanged; partial chunks are
// not reused (no 'C' entries).
//
// Thread-safety: one thread (the channel's collectives are called in order).
#pragma once

#include <string>
#include <vector>

#include "src/status.h"
#include "sync/copier.h"
#include "sync/plan.h"

namespace ds::sync {

// What a fan-out needs from the job (the CLI implements it over mpi/world.h; sync/ never links
// MPI). Every method is a collective: all ranks call it in the same order.
class FanoutChannel {
 public:
  virtual ~FanoutChannel() = default;
  virtual bool root() const = 0;
  // How many ranks pass true.
  virtual Result<uint64_t> CountTrue(bool mine) = 0;
  // Root's *bytes on every rank (root passes them; the others' are replaced).
  virtual Status Share(std::string* bytes) = 0;
};

// Copies `files` (the same list, in the same order, on every rank) for the ranks whose
// `needed[i]` is true; results come back for the needed files only, in order. Options as
// CopyFiles; `threads` are rank 0's reads in flight per chunk (bucket and previous are not
// used).
std::vector<CopyResult> FanoutCopy(const std::vector<PlanFile>& files,
                                   const std::vector<bool>& needed, const CopyOptions& options,
                                   FanoutChannel* channel);

}  // namespace ds::sync
