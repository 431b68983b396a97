// The parts of mpi/world.h that do not need MPI: launcher detection and the host name.
#include <unistd.h>

#include <cstdlib>

#include "mpi/world.h"

namespace ds::mpi {

std::string LauncherEnv() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"}) {
    if (std::getenv(v) != nullptr) return v;
  }
  return "";
}

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

void World::RunCleanup() {
  auto cleanup = std::move(cleanup_);
  cleanup_ = nullptr;
  if (cleanup) cleanup();
}

}  // namespace ds::mpi
