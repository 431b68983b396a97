// dsbench's commands as ranks of an MPI job (docs/mpi.md): part of the dsbench executable, the
// one place where bench/ meets mpi/world.h (the bench library itself never links MPI).
#pragma once

#include <string>

#include "bench/io_job.h"
#include "bench/ranks.h"
#include "mpi/world.h"
#include "src/system_probe.h"

namespace ds::bench {

struct MpiIoFlags {
  bool shared_file = false;  // one file, rank r's region at r * size (IOR without -F)
  bool stonewall = false;    // all ranks stop when the first finishes
  bool json = false;
};

// `dsbench io` on every rank: one start barrier, results gathered and printed by rank 0.
// Returns main's exit code (a failure on any rank ends the whole job through World::Fail).
int RunIoRanks(mpi::World& world, IoJobOptions o, const MpiIoFlags& flags,
               const SystemProbe& probe);

}  // namespace ds::bench
