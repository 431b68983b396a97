// mpi/world.h in a build without MPI: a world of one. A launcher with several ranks is refused.
#include <cstdio>
#include <cstdlib>

#include "mpi/world.h"

namespace ds::mpi {

std::string HostName();

bool Built() { return false; }

struct World::Pending {};

Result<std::unique_ptr<World>> World::Start(int*, char***) {
  const char* n = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (n == nullptr) n = std::getenv("PMI_SIZE");
  if (n != nullptr && std::atoi(n) > 1) {
    return Status(Code::kUnsupported,
                  "started by an MPI launcher with " + std::string(n) +
                      " ranks, but this build has no MPI (each rank would run the whole job); "
                      "install libopenmpi-dev and rebuild, or run without mpirun");
  }
  std::unique_ptr<World> w(new World());
  w->host_ = HostName();
  return w;
}

World::~World() = default;
Status World::Barrier(std::string_view) { return Status::Ok(); }
Result<std::vector<std::string>> World::Gather(const std::string& mine, std::string_view) {
  return std::vector<std::string>{mine};
}
Result<std::string> World::Broadcast(const std::string& data, int, std::string_view) {
  return data;
}
void World::ReportAgreed(const JobFailure& f, const std::string& message, int exit_code) {
  Report(tool_, f.rank, f.host, message, exit_code);
}
void World::Report(std::string_view tool, int, const std::string&, const std::string& message,
                   int) {
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(tool.size()), tool.data(), message.c_str());
}
Status World::BroadcastInPlace(std::string*, int, std::string_view) { return Status::Ok(); }
Result<uint64_t> World::SumAll(uint64_t mine, std::string_view) { return mine; }
void World::AnnounceDone() { announced_ = true; }
bool World::AnyDone() { return done_seen_; }  // never set: no other rank
Status World::EndRound() {
  round_++;
  received_ = 0;
  return Status::Ok();
}
void World::Fail(std::string_view tool, const std::string& message, int) {
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(tool.size()), tool.data(), message.c_str());
}
void World::Poll() {}
void World::Abort(std::string_view, int, const std::string&, const std::string&, int code) {
  RunCleanup();
  std::exit(code);
}
void World::Wait(void*, std::string_view) {}

}  // namespace ds::mpi
