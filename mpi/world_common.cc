// The parts of mpi/world.h that do not need MPI: launcher detection and the host name.
#include <unistd.h>

#include <cstdlib>

#include "mpi/world.h"
#include "src/endian.h"

namespace ds::mpi {

Result<std::vector<std::string>> World::AllGather(const std::string& mine, std::string_view what) {
  // Rank 0 gathers and broadcasts the lot as length-prefixed parts.
  DS_ASSIGN_OR_RETURN(auto parts, Gather(mine, what));
  std::string all;
  for (const auto& p : parts) {
    PutLE64(&all, p.size());
    all.append(p);
  }
  DS_RETURN_IF_ERROR(BroadcastInPlace(&all, 0, what));
  std::vector<std::string> out;
  for (size_t at = 0; at + 8 <= all.size();) {
    uint64_t n = LoadLE64(all.data() + at);
    out.push_back(all.substr(at + 8, n));
    at += 8 + n;
  }
  return out;
}

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
