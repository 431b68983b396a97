// `dsbench storage` (docs/dsbench.md#storage): can this storage feed training? Two fio-style
// jobs on one test file, a sequential 1 MiB read (4 jobs x iodepth 8) and a random 4 KiB read
// (1 job x iodepth 32), judged against a bar: PASS when both the bandwidth and the IOPS reach it.
//
// RunStorage runs the jobs (io_uring, falling back to psync with a warning where the kernel
// refuses io_uring) and removes the test file it made unless `keep`. JudgeStorage is the pure
// PASS/FAIL decision; StorageJson and StorageText render a run.
//
// Thread-safety: functions of their arguments only; RunStorage runs jobs on threads of its own.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/io/io_job.h"
#include "bench/io/ranks.h"
#include "src/rpc_bill.h"
#include "src/status.h"

namespace ds::bench {

struct StorageOptions {
  // A directory (the test file PATH/dsbench.storage.0) or a file; or an nfs:// URL of either,
  // read through the backend's own engine (ioengine=nfs, buffered: no O_DIRECT over libnfs).
  std::string path;
  uint64_t min_bw = 500000000;  // bytes/s of the sequential read
  uint64_t min_iops = 5000;     // of the random 4 KiB read
  uint64_t size = 0;            // test file size; 0: 8 GiB (quick: 1 GiB)
  double runtime = 0;           // seconds per test; 0: 30 (quick: 5)
  bool direct = true;
  bool quick = false;                 // a first look: defaults above and a shorter ramp
  bool keep = false;                  // keep the test file
  std::string disk_device;            // sampled while the jobs run (SystemProbe::block_device)
  std::string ioengine = "io_uring";  // psync: no io_uring attempted (and no fallback needed)
  std::string file_name = "dsbench.storage.0";  // the test file's name in a directory PATH
  IoHooks hooks;  // passed to both jobs: one rank of an MPI job (bench/mpi_cli.h)
};

struct StorageVerdict {
  double bw = 0;    // bytes/s, sequential 1 MiB read
  double iops = 0;  // random 4 KiB read
  bool bw_pass = false;
  bool iops_pass = false;
  bool pass() const { return bw_pass && iops_pass; }
};

// The two jobs' options, as RunStorage runs them.
IoJobOptions SequentialJob(const StorageOptions& o);
IoJobOptions RandomJob(const StorageOptions& o);

// PASS/FAIL of the two results (each the first job of its run, group-reported) against the bar.
// A result with no runtime measured counts as 0.
StorageVerdict JudgeStorage(const JobResult& sequential, const JobResult& random,
                            const StorageOptions& bar);

struct StorageRun {
  IoJobOptions seq_job, rnd_job;  // as run (ioengine psync after a fallback)
  IoRun seq, rnd;
  StorageVerdict verdict;
  // Each test's RPC bill (src/rpc_bill.h): libnfs's for an nfs:// PATH, the kernel client's for
  // a PATH on an NFS mount; none elsewhere.
  std::optional<RpcBill> seq_rpc, rnd_rpc;
};

// Runs both jobs and judges them. `warn` receives warnings (the io_uring fallback).
Result<StorageRun> RunStorage(const StorageOptions& o,
                              const std::function<void(const std::string&)>& warn);

// {"sequential_read": job, "random_read": job, "verdict": {bw_bytes, min_bw_bytes, bw_pass,
// iops, min_iops, iops_pass, pass, quick}}; each job as fio's with the run's disk_util and
// its "rpc_bill" (null without one).
nlohmann::json StorageJson(const StorageOptions& o, const StorageRun& r);
// Both jobs' fio-like summaries, then one PASS/FAIL line each.
std::string StorageText(const StorageOptions& o, const StorageRun& r);

// The cluster verdict of `mpirun -n N dsbench storage` (docs/mpi.md): every client (rank) must
// reach the bar on its own while all run at once, and the aggregate (IOR's, over the window)
// must reach `min_aggregate_bw` when one is given (0: none).
struct ClusterStorageVerdict {
  std::vector<StorageVerdict> clients;  // in rank order
  double aggregate_bw = 0, aggregate_iops = 0;
  uint64_t min_aggregate_bw = 0;
  bool aggregate_pass = true;
  size_t failing = 0;  // clients below the bar
  bool pass() const { return failing == 0 && aggregate_pass; }
};
// REQUIRES: seq and rnd hold the same ranks in the same order.
ClusterStorageVerdict JudgeCluster(const ClusterIo& seq, const ClusterIo& rnd,
                                   const StorageOptions& bar, uint64_t min_aggregate_bw);
// {"sequential_read": ClusterJson, "random_read": ClusterJson, "verdict": {"clients": [{rank,
// hostname, bw_bytes, bw_pass, iops, iops_pass, pass}], "aggregate_bw_bytes", "aggregate_iops",
// "min_aggregate_bw_bytes", "aggregate_pass", "every_client_pass", "pass", ...the bar}}.
nlohmann::json ClusterStorageJson(const StorageOptions& o, const IoJobOptions& seq_job,
                                  const IoJobOptions& rnd_job, const ClusterIo& seq,
                                  const ClusterIo& rnd, const ClusterStorageVerdict& v);
std::string ClusterStorageText(const StorageOptions& o, const ClusterIo& seq, const ClusterIo& rnd,
                               const ClusterStorageVerdict& v);

}  // namespace ds::bench
