// Job: the job a tool runs in, as the libraries see it (docs/mpi.md). One rank of `mpirun`, or a
// plain process (a job of one). The core names the collectives; mpi/ implements them over Open
// MPI (mpi::World is a Job), so pack/, sync/ and bench/ never link MPI, and a test can run a job
// on threads.
//
// Every method is a collective: every rank calls it, in the same order. `what` names the step in
// a timeout or a failure ("rank 0 preparing OUT"). AllGather is the one primitive a Job must
// give; the others default to it, and a transport overrides them where it has better (MPI's
// gather, broadcast, barrier and reduction).
//
// Failures are statuses, not exit codes: Agree returns the lowest failed rank's status, keeps it
// with its rank and host (agreed_failure()), and the tool decides what to print and how to exit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/status.h"

namespace ds {

// A rank's failure, as every rank learns it from Agree.
struct JobFailure {
  int rank = 0, size = 1;
  std::string host;  // the failed rank's
  Status status;     // its own status, the message without the "rank R of N" prefix
};

class Job {
 public:
  virtual ~Job() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  bool root() const { return rank() == 0; }
  // This process's host name (gethostname; "?" when it has none): the straggler's and the
  // failure's.
  virtual std::string host() const;

  // Every rank's bytes, in rank order, on every rank.
  virtual Result<std::vector<std::string>> AllGather(const std::string& mine,
                                                     std::string_view what) = 0;
  // Every rank's bytes, in rank order, on rank 0; the others get an empty vector.
  virtual Result<std::vector<std::string>> Gather(const std::string& mine, std::string_view what);
  // Rank 0's *bytes on every rank: rank 0's are sent, every other rank's replaced.
  virtual Status Broadcast(std::string* bytes, std::string_view what);
  virtual Status Barrier(std::string_view what);
  // The sum of every rank's `mine`, on every rank.
  virtual Result<uint64_t> Sum(uint64_t mine, std::string_view what);

  // OK on every rank when `mine` is OK on all of them; else, on every rank, the lowest failed
  // rank's status, its message prefixed "rank R of N: ". Where a step can fail on some ranks only
  // (a path missing on one node), every rank learns it and cleans up.
  // The failure is also kept, whole, until the next Agree: agreed_failure().
  Status Agree(const Status& mine, std::string_view what);
  // The last Agree's failure (which rank, its host, its own status); nullopt when it agreed.
  const std::optional<JobFailure>& agreed_failure() const { return agreed_failure_; }

 private:
  std::optional<JobFailure> agreed_failure_;
};

}  // namespace ds
