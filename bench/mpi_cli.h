// dsbench's commands as ranks of an MPI job (docs/mpi.md): part of the dsbench executable, the
// one place where bench/ meets mpi/world.h (the bench library itself never links MPI).
#pragma once

#include <string>

#include "bench/compare/compare.h"
#include "bench/io/io_job.h"
#include "bench/io/ranks.h"
#include "bench/meta/meta.h"
#include "bench/replay/replay.h"
#include "bench/storage/storage.h"
#include "mpi/world.h"
#include "src/system_probe.h"

namespace ds::bench {

struct MpiIoFlags {
  bool shared_file = false;  // one file, rank r's region at r * size (IOR without -F)
  bool stonewall = false;    // all ranks stop when the first finishes
  unsigned repetitions = 1;  // IOR's -i: the job this many times, min/max/mean of each figure
  bool json = false;
};

// `dsbench io` on every rank: one start barrier, results gathered and printed by rank 0.
// Returns main's exit code: a test file that fails on a rank ends every rank at the start barrier
// (Job::Agree, reported by rank 0); a failure later ends the whole job through World::Fail.
int RunIoRanks(mpi::World& world, IoJobOptions o, const MpiIoFlags& flags,
               const SystemProbe& probe);

// `dsbench storage` on every rank at once (the cluster verdict, docs/mpi.md): each rank runs
// both jobs on its own test file, starting each job on a common barrier; rank 0 judges every
// client against the bar and the aggregate against min_aggregate_bw (0: none). Every rank
// returns the verdict's exit code (0 PASS, 1 FAIL), so mpirun's is the verdict's.
int RunStorageRanks(mpi::World& world, StorageOptions so, uint64_t min_aggregate_bw, bool json,
                    const SystemProbe& probe);

// `dsbench replay` as one rank of a training job across nodes: this rank reads its part of each
// epoch (ReplayOptions::rank/world), every epoch starts on a barrier, and rank 0 prints per-rank
// and aggregate figures and the straggler. DATASET may hold %r. Every rank returns the exit
// code (1: the job starves or samples failed their checks).
int RunReplayRanks(mpi::World& world, ReplayOptions o, bool json, const SystemProbe& probe);

// `dsbench compare` as one rank of an MPI job: the hooks (bench/compare/compare.h, CompareRanks)
// over `world`, which must outlive them. A failure in a hook ends the job (World::Fail).
CompareRanks CompareRanksOf(mpi::World& world);

// Ends this rank's part of the job with `s` (World::Fail: rank 0 prints it, mpirun exits with
// its code).
int FailRank(mpi::World& world, const Status& s);

// After a step that agreed across ranks (Job::Agree): 0 when it agreed; else rank 0 prints the
// failed rank's message (World::ReportAgreed) and every rank gets its exit code, to clean up
// and return from main.
int ReportAgreed(mpi::World& world);

// `dsbench meta` on every rank (mdtest's model): a directory per rank (mdtest -u) or, with
// shared_dir, one directory for all (mdtest's default, made and removed by rank 0); each phase
// starts on a barrier across ranks; rank 0 prints the aggregate per phase (all ops over the
// slowest rank's time) and each rank's rate.
int RunMetaRanks(mpi::World& world, MetaOptions mo, bool shared_dir, bool json,
                 const SystemProbe& probe);

}  // namespace ds::bench
