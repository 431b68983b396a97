// One rank of an MPI job, or a plain process (docs/mpi.md). The only code that names MPI: linked
// by the three CLIs, never by src/, formats/, bench/, pack/, sync/ or the Python module, and
// built without MPI (world_none.cc) when the machine has no libopenmpi-dev or DSPACK_MPI=OFF.
//
// Start-up. MPI_Init runs only when a launcher's environment is present (mpirun/Open MPI's
// OMPI_COMM_WORLD_SIZE, PMIx's PMIX_RANK, Slurm's PMI_RANK/PMI_SIZE). A plain run never calls
// MPI: Open MPI's singleton init would spawn an orted for nothing. A build without MPI started by
// a launcher with more than one rank refuses (N copies would each run the whole job).
//
// Failures (Open MPI 4.1 has no fault tolerance and no collective timeouts): a rank that fails
// calls Fail(), which sends its message to rank 0; rank 0 prints "<tool>: rank R of N (host):
// <message>" (and, for a JSON run, a JSON error document on stdout) and calls MPI_Abort with the
// rank's exit code, which mpirun returns. Every collective here is nonblocking, polled about every
// millisecond against a deadline (timeout(), default 600 s after this rank enters it); while it
// waits, rank 0 also takes failure messages from any rank. A deadline that passes is a failure of
// its own ("timed out waiting for ...", exit 2).
//
// Stonewalling: AnnounceDone() tells every other rank that this one has finished its work;
// AnyDone() says whether some rank has (IOR's -D wear-out / mdtest's -W: all stop with the first).
// EndRound() settles a round's messages before the next one (a repetition).
//
// The destructor meets every rank at a last barrier (which takes failures, so a rank that fails
// after the job's last collective is still reported by rank 0) before MPI_Finalize.
//
// Thread-safety: call from one thread at a time (MPI_THREAD_SERIALIZED): the main thread, or a
// worker while the main thread waits for it (dsbench meta's phase barrier runs on a worker).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/job.h"
#include "src/status.h"

namespace ds::mpi {

// The launcher variable found in the environment ("OMPI_COMM_WORLD_SIZE", ...), or "".
std::string LauncherEnv();
// True when this build has MPI.
bool Built();

class World final : public Job {
 public:
  // See the file comment. Returns an error (kUnsupported) for a launcher with several ranks in
  // a build without MPI.
  static Result<std::unique_ptr<World>> Start(int* argc, char*** argv);
  ~World();  // MPI_Finalize after the messages still in flight are settled
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  // Stopped from outside: when one rank dies, mpirun SIGTERMs the others and SIGKILLs them
  // about a second later, so a rank that waits in a collective for the dead one would never
  // clean up. `stop` (the tool's SIGINT/SIGTERM flag) is polled in every wait; once it is true,
  // the abort cleanup runs and this rank exits 1 ("interrupted while waiting for ..."). The
  // cleanup also runs before an abort of this rank (a failure, a timeout), once; it must be quick
  // or detach itself (dsbench meta removes its tree from a process of its own). An empty
  // function clears it.
  void set_stop(std::function<bool()> stop) { stop_ = std::move(stop); }
  void set_abort_cleanup(std::function<void()> cleanup) { cleanup_ = std::move(cleanup); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool mpi() const { return mpi_; }  // false: a plain process, a world of one
  std::string host() const override { return host_; }
  void set_tool(std::string tool) { tool_ = std::move(tool); }  // the prefix of its messages
  void set_timeout(double seconds) { timeout_ = seconds; }
  double timeout() const { return timeout_; }
  // Rank 0 also prints a failure as a JSON document on stdout ({"error": {...}}).
  void set_json_errors(bool on) { json_errors_ = on; }

  // Collectives: every rank calls them in the same order. `what` names the wait in a timeout.
  // The job's collectives (src/job.h): Barrier, Gather and Sum are MPI's; AllGather is a gather
  // and a broadcast of the lot; Broadcast(bytes) is BroadcastInPlace from rank 0.
  Status Barrier(std::string_view what) override;
  Result<std::vector<std::string>> Gather(const std::string& mine, std::string_view what) override;
  Result<std::vector<std::string>> AllGather(const std::string& mine,
                                             std::string_view what) override;
  Status Broadcast(std::string* bytes, std::string_view what) override {
    return BroadcastInPlace(bytes, 0, what);
  }
  Result<uint64_t> Sum(uint64_t mine, std::string_view what) override { return SumAll(mine, what); }
  // Every rank gets root's `data` (root passes it; the others' is ignored).
  Result<std::string> Broadcast(const std::string& data, int root, std::string_view what);
  // The same in place, without a copy: root's *data is sent, every other rank's is replaced.
  Status BroadcastInPlace(std::string* data, int root, std::string_view what);
  // Job::Agree (src/job.h) is the agreement: every rank learns the lowest failed rank's status
  // with its rank and host (agreed_failure()). The tool then prints it once, from rank 0, with
  // ReportAgreed, cleans up on every rank and returns its exit code from main: nothing a rank
  // made is left behind (an abort would kill it mid-wait).
  //
  // Rank 0 prints the failure of rank f.rank on f.host as Fail does ("<tool>: rank R of N
  // (host): <message>", and the JSON error document with `exit_code` when set_json_errors), with
  // `message` the tool's rendering of f.status; the other ranks print nothing. A plain process
  // prints "<tool>: <message>".
  void ReportAgreed(const JobFailure& f, const std::string& message, int exit_code);
  // Sum of a value over all ranks, on every rank.
  Result<uint64_t> SumAll(uint64_t mine, std::string_view what);

  // Stonewalling (see the file comment). Also takes failure messages at rank 0.
  void AnnounceDone();
  bool AnyDone();
  // Collective: ends a stonewalled round (a repetition). Every rank receives the announcements
  // still meant for it and its own sends complete, so the next round starts clean.
  Status EndRound();
  // Rank 0: if another rank has sent its failure, prints it and aborts the job. Call it now and
  // then during long work outside collectives, so a failed rank does not wait on rank 0.
  void Poll();

  // Ends this process's part in the job with `message` (already rendered, one line) and the
  // tool's exit code `exit_code`. A plain process prints "<tool>: <message>" and returns, and
  // main returns the code itself. Under MPI it does not return (see the file comment): mpirun
  // exits with `exit_code`.
  void Fail(std::string_view tool, const std::string& message, int exit_code);

 private:
  World() = default;
  void Report(std::string_view tool, int rank, const std::string& host, const std::string& message,
              int code);
  [[noreturn]] void Abort(std::string_view tool, int rank, const std::string& host,
                          const std::string& message, int code);
  // Polls `req` (an MPI_Request*) until done; past the deadline, prints the timeout on this rank
  // and aborts the job (rank 0 may be the one that is stuck).
  void Wait(void* req, std::string_view what);

  void RunCleanup();  // the abort cleanup, once

  std::function<bool()> stop_;
  std::function<void()> cleanup_;
  bool mpi_ = false;
  int rank_ = 0, size_ = 1;
  std::string host_;
  std::string tool_ = "dspack";
  double timeout_ = 600;
  bool json_errors_ = false;
  bool announced_ = false, done_seen_ = false;
  int round_ = 0;          // stonewall rounds: a tag each, so no round sees another's messages
  uint64_t received_ = 0;  // announcements received this round
  struct Pending;
  std::vector<std::unique_ptr<Pending>> pending_;  // AnnounceDone's sends
};

}  // namespace ds::mpi
