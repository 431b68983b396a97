// mpi/world.h over Open MPI (or any MPI-3 library): see the header for the contract.
// The C API only: Open MPI's deprecated C++ bindings would need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "mpi/world.h"

namespace ds::mpi {

std::string HostName();

namespace {

constexpr int kTagFail = 7101;  // a rank's failure, to rank 0: LE32 exit code, host, '\n', message
constexpr int kTagDone = 7200;  // + round: stonewalling, the sender has finished (no payload)
constexpr uint64_t kChunk = 1u << 30;   // MPI counts are ints: broadcast in pieces of 1 GiB
constexpr uint64_t kSpinPolls = 20000;  // about 10-50 ms of yield-polling before sleeping

}  // namespace

struct World::Pending {
  MPI_Request req = MPI_REQUEST_NULL;
};

bool Built() { return true; }

Result<std::unique_ptr<World>> World::Start(int* argc, char*** argv) {
  std::unique_ptr<World> w(new World());
  w->host_ = HostName();
  if (LauncherEnv().empty()) return w;  // a plain run: no singleton init
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    return Status(Code::kIOError, "MPI_Init_thread failed under " + LauncherEnv());
  }
  if (provided < MPI_THREAD_SERIALIZED) {  // a worker thread calls MPI (dsbench meta's barrier)
    MPI_Finalize();
    return Status(Code::kUnsupported, "this MPI library does not give MPI_THREAD_SERIALIZED");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &w->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &w->size_);
  w->mpi_ = true;
  return w;
}

World::~World() {
  if (!mpi_) return;
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  Wait(&req, "every rank at the end of the job");
  for (auto& p : pending_) {  // complete by now (EndRound), or never matched: let them go
    if (p->req != MPI_REQUEST_NULL) MPI_Request_free(&p->req);
  }
  MPI_Finalize();
}

void World::Report(std::string_view tool, int rank, const std::string& host,
                   const std::string& message, int code) {
  std::fprintf(stderr, "%.*s: rank %d of %d (%s): %s\n", static_cast<int>(tool.size()), tool.data(),
               rank, size_, host.c_str(), message.c_str());
  if (json_errors_ && rank_ == 0) {
    nlohmann::json j = {
        {"error", {{"rank", rank}, {"host", host}, {"message", message}, {"exit_code", code}}}};
    std::printf("%s\n", j.dump(2).c_str());
  }
  std::fflush(stdout);
  std::fflush(stderr);
}

void World::Abort(std::string_view tool, int rank, const std::string& host,
                  const std::string& message, int code) {
  RunCleanup();
  Report(tool, rank, host, message, code);
  if (mpi_) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

void World::Poll() {
  if (!mpi_ || rank_ != 0) return;
  int flag = 0;
  MPI_Status st;
  MPI_Iprobe(MPI_ANY_SOURCE, kTagFail, MPI_COMM_WORLD, &flag, &st);
  if (!flag) return;
  int n = 0;
  MPI_Get_count(&st, MPI_BYTE, &n);
  std::string msg(static_cast<size_t>(n), '\0');
  MPI_Recv(msg.data(), n, MPI_BYTE, st.MPI_SOURCE, kTagFail, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  int code = 2;
  std::string host = "?";
  if (msg.size() >= 4) {
    uint32_t c;
    std::memcpy(&c, msg.data(), 4);
    code = static_cast<int>(c);
    msg.erase(0, 4);
    if (auto nl = msg.find('\n'); nl != std::string::npos) {
      host = msg.substr(0, nl);
      msg.erase(0, nl + 1);
    }
  }
  Abort(tool_, st.MPI_SOURCE, host, msg, code);
}

void World::Wait(void* r, std::string_view what) {
  auto* req = static_cast<MPI_Request*>(r);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(timeout_));
  uint64_t polls = 0;
  while (true) {
    int done = 0;
    if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      Abort(tool_, rank_, host_, "MPI error while waiting for " + std::string(what), 2);
    }
    if (done) return;
    Poll();
    if (stop_ && stop_()) {  // SIGTERM from mpirun (another rank died), or ^C
      RunCleanup();
      std::fprintf(stderr, "%s: rank %d of %d (%s): interrupted while waiting for %.*s\n",
                   tool_.c_str(), rank_, size_, host_.c_str(), static_cast<int>(what.size()),
                   what.data());
      std::_Exit(1);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      Abort(tool_, rank_, host_,
            "timed out after " + std::to_string(static_cast<int>(timeout_)) + " s waiting for " +
                std::string(what) +
                ": another rank is stuck or dead (raise the MPI timeout if the work is that long)",
            2);
    }
    // MPI progresses a large message (a broadcast's segments) only inside calls like MPI_Test:
    // poll at full speed (yielding the core) for the first moments of a wait, then back off to
    // a short sleep so that a rank waiting long (a barrier behind a slow rank) costs no core.
    if (++polls < kSpinPolls) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
}

Status World::Barrier(std::string_view what) {
  if (!mpi_) return Status::Ok();
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  Wait(&req, what);
  return Status::Ok();
}

Result<std::vector<std::string>> World::Gather(const std::string& mine, std::string_view what) {
  if (!mpi_) return std::vector<std::string>{mine};
  if (mine.size() > static_cast<size_t>(INT32_MAX)) {
    return Status(Code::kInvalidArgument, "a rank's results exceed 2 GiB");
  }
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(rank_ == 0 ? static_cast<size_t>(size_) : 0);
  MPI_Request req;
  MPI_Igather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
  Wait(&req, what);
  std::vector<int> displs(lens.size());
  std::string all;
  if (rank_ == 0) {
    uint64_t total = 0;
    for (size_t i = 0; i < lens.size(); i++) {
      displs[i] = static_cast<int>(total);
      total += static_cast<uint64_t>(lens[i]);
    }
    if (total > static_cast<uint64_t>(INT32_MAX)) {
      return Status(Code::kInvalidArgument, "the ranks' results exceed 2 GiB");
    }
    all.resize(total);
  }
  MPI_Igatherv(mine.data(), len, MPI_BYTE, all.data(), lens.data(), displs.data(), MPI_BYTE, 0,
               MPI_COMM_WORLD, &req);
  Wait(&req, what);
  std::vector<std::string> out;
  for (size_t i = 0; i < lens.size(); i++) {
    out.push_back(all.substr(static_cast<size_t>(displs[i]), static_cast<size_t>(lens[i])));
  }
  return out;
}

Result<std::string> World::Broadcast(const std::string& data, int root, std::string_view what) {
  std::string out = rank_ == root ? data : std::string();
  DS_RETURN_IF_ERROR(BroadcastInPlace(&out, root, what));
  return out;
}

Status World::BroadcastInPlace(std::string* data, int root, std::string_view what) {
  if (!mpi_) return Status::Ok();
  uint64_t n = rank_ == root ? data->size() : 0;
  MPI_Request req;
  MPI_Ibcast(&n, 1, MPI_UINT64_T, root, MPI_COMM_WORLD, &req);
  Wait(&req, what);
  if (rank_ != root) data->resize(n);
  for (uint64_t off = 0; off < n; off += kChunk) {
    int k = static_cast<int>(std::min(kChunk, n - off));
    MPI_Ibcast(data->data() + off, k, MPI_BYTE, root, MPI_COMM_WORLD, &req);
    Wait(&req, what);
  }
  return Status::Ok();
}

void World::ReportAgreed(const JobFailure& f, const std::string& message, int exit_code) {
  if (rank_ == 0) Report(tool_, f.rank, f.host, message, exit_code);
}

Result<uint64_t> World::SumAll(uint64_t mine, std::string_view what) {
  if (!mpi_) return mine;
  uint64_t sum = 0;
  MPI_Request req;
  MPI_Iallreduce(&mine, &sum, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD, &req);
  Wait(&req, what);
  return sum;
}

void World::AnnounceDone() {
  if (!mpi_ || announced_) return;
  announced_ = true;
  for (int r = 0; r < size_; r++) {
    if (r == rank_) continue;
    auto p = std::make_unique<Pending>();
    MPI_Isend(nullptr, 0, MPI_BYTE, r, kTagDone + round_, MPI_COMM_WORLD, &p->req);
    pending_.push_back(std::move(p));
  }
}

bool World::AnyDone() {
  if (!mpi_) return false;
  Poll();
  if (done_seen_) return true;
  int flag = 0;
  MPI_Status st;
  MPI_Iprobe(MPI_ANY_SOURCE, kTagDone + round_, MPI_COMM_WORLD, &flag, &st);
  if (flag) {
    MPI_Recv(nullptr, 0, MPI_BYTE, st.MPI_SOURCE, kTagDone + round_, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    received_++;
    done_seen_ = true;
  }
  return done_seen_;
}

Status World::EndRound() {
  if (!mpi_) return Status::Ok();
  DS_ASSIGN_OR_RETURN(uint64_t announcers, SumAll(announced_ ? 1 : 0, "the end of a round"));
  // Every announcer sent to every other rank: receive the rest of what was meant for this one.
  uint64_t expected = announcers - (announced_ ? 1 : 0);
  while (received_ < expected) {
    MPI_Request req;
    MPI_Irecv(nullptr, 0, MPI_BYTE, MPI_ANY_SOURCE, kTagDone + round_, MPI_COMM_WORLD, &req);
    Wait(&req, "the ranks' announcements");
    received_++;
  }
  for (auto& p : pending_) Wait(&p->req, "this rank's announcements");
  pending_.clear();
  announced_ = done_seen_ = false;
  received_ = 0;
  round_++;
  return Status::Ok();
}

void World::Fail(std::string_view tool, const std::string& message, int code) {
  if (!mpi_) {
    std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(tool.size()), tool.data(), message.c_str());
    return;
  }
  tool_ = std::string(tool);
  if (rank_ == 0) Abort(tool, 0, host_, message, code);
  std::string payload(4, '\0');
  auto c = static_cast<uint32_t>(code);
  std::memcpy(payload.data(), &c, 4);
  payload += host_ + "\n" + message;
  MPI_Request req;
  MPI_Isend(payload.data(), static_cast<int>(payload.size()), MPI_BYTE, 0, kTagFail, MPI_COMM_WORLD,
            &req);
  // Rank 0 prints it and aborts the job, which ends this process too. If it does not within the
  // timeout (rank 0 stuck outside any collective), say it here and abort from this rank.
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(timeout_));
  while (std::chrono::steady_clock::now() < deadline) {
    int done = 0;
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  Abort(tool, rank_, host_, message + " (rank 0 did not answer)", code);
}

}  // namespace ds::mpi
