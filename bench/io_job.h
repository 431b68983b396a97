// fio-compatible IO jobs for `dsbench io` and `dsbench storage` (docs/dsbench.md).
//
// Option names and semantics follow fio's HOWTO: rw, bs, iodepth, numjobs, direct, size,
// runtime, time_based, ramp_time, ioengine, invalidate, rwmixread, group_reporting. All jobs of
// a run use the same test file, as fio does with --filename. Each job thread owns one IO engine
// (src/io_engine.h) and keeps `iodepth` requests in flight; completion latency (submission to
// completion, fio's clat) goes into a LatencyHistogram after ramp_time. Rates use fio's formulas
// (bytes*1000/runtime_ms), and a group's runtime is its slowest job's.
//
// Test files: when PATH is a directory, the file is PATH/dsbench.<name>.0 and is created by
// the run (incompressible content), checked against free space first, and removed afterwards
// unless `keep`. When PATH is an existing regular file it is used as is and never removed; it
// must hold `size` bytes for reads. dsbench never writes to a file it did not create: a job that
// writes (write, randwrite, randrw) to an existing PATH is refused unless allow_overwrite. A
// block device is refused unless allow_device.
//
// Ranges: numjobs 1..kMaxJobs (fio's own limit on jobs), iodepth 1..kMaxIodepth, rwmixread
// 0..100; a thread that cannot be started is an error (the jobs already running stop, and a
// test file the run created is removed), as is a depth the engine refuses.
//
// Disk stats: while the jobs run (after the test file is laid out, ramp_time included, as fio
// does) /proc/diskstats is sampled for `disk_device` (src/diskstats.h) and reported as fio's
// disk_util.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "src/diskstats.h"
#include "src/histogram.h"
#include "src/status.h"

namespace ds::bench {

inline constexpr unsigned kMaxJobs = 4096;     // fio's REAL_MAX_JOBS
inline constexpr unsigned kMaxIodepth = 4096;  // per job

enum class RwMode { kRead, kWrite, kRandRead, kRandWrite, kRandRw };

struct IoJobOptions {
  std::string name = "dsbench";
  std::string path;
  RwMode rw = RwMode::kRead;
  uint64_t bs = 4096;
  unsigned iodepth = 1;
  unsigned numjobs = 1;
  bool direct = false;
  uint64_t size = 0;  // bytes of the file each job works on (and does, unless time_based)
  // Where in the file the jobs' region of `size` bytes starts (fio's offset): an MPI rank's
  // slice of one shared file (fio's offset_increment, IOR without -F). An existing file must
  // hold offset + size bytes; a file the run creates holds exactly that.
  uint64_t offset = 0;
  // The test file's name when PATH is a directory; empty: dsbench.<name>.0.
  std::string file_name;
  double runtime = 0;       // seconds; 0 = until `size` is done
  bool time_based = false;  // keep going over the file until runtime
  double ramp_time = 0;     // seconds not counted
  std::string ioengine = "psync";
  bool registerfiles = false;  // io_uring: register the file (fio's registerfiles)
  bool fixedbufs = false;      // io_uring: register the IO buffers (fio's fixedbufs)
  bool sqthread_poll = false;  // io_uring: a kernel thread polls the SQ (fio's sqthread_poll)
  unsigned iodepth_batch_submit = 1;  // submit every N queued requests (fio's default: 1)
  bool invalidate = true;             // posix_fadvise(DONTNEED) on the file before the job
  unsigned rwmixread = 50;
  bool group_reporting = false;
  bool keep = false;
  bool allow_device = false;
  bool allow_overwrite = false;  // may write to an existing file PATH (it is changed for good)
  uint64_t seed = 0x6473626e;
  // Block device sampled in /proc/diskstats while the jobs run (SystemProbe::block_device);
  // empty: none, and the report says "n/a".
  std::string disk_device;
};

struct DirStats {
  uint64_t io_bytes = 0;
  uint64_t ios = 0;
  LatencyHistogram clat;
};

struct JobResult {
  std::string name;
  unsigned jobs = 1;  // > 1 for a group-reported result
  double runtime_ms = 0;
  DirStats read, write;
  double usr_cpu = 0, sys_cpu = 0;  // % of one core over the runtime, as fio prints
  // The measured window on the steady clock (ns): after ramp_time, to the last completion. A
  // group's is the union of its jobs'. Ranks of an MPI job compare them after a common barrier.
  int64_t start_ns = 0, end_ns = 0;
};

Result<RwMode> ParseRw(const std::string& text);
const char* RwName(RwMode m);

struct IoRun {
  std::vector<JobResult> jobs;   // one per job, or one merged result with group_reporting
  std::optional<DiskUtil> disk;  // disk_device's activity while the jobs ran, if it has one
};

struct TestFile {
  std::string path;
  bool created = false;  // by this call: the caller removes it (RunIoJobs does, unless keep)
};
// Resolves PATH to the test file, creating and filling it (offset + size bytes) when PATH is a
// directory and the file is not there yet; sets o.size from an existing file when it is 0. The
// checks of the file comment apply. RunIoJobs calls it; an MPI run's rank 0 calls it to lay out
// the one file that every rank shares.
Result<TestFile> PrepareTestFile(IoJobOptions& o);

// Callbacks into the caller's thread, for a run that is one rank of an MPI job (the CLI wires
// them to mpi/world.h; bench/ itself never links MPI). Both optional.
struct IoHooks {
  // Once the test file is laid out, or failed to be (`prepared`), before any job starts and
  // before the disk is sampled. A failed `prepared` is returned either way (after cleanup);
  // non-OK from the hook ends the run with that status. Under MPI: every rank reports its
  // outcome and waits for the others (the phase's start barrier), so a path missing on one rank
  // stops all of them with their own files removed.
  std::function<Status(const Status& prepared)> ready;
  // About every millisecond while the jobs run, and once more when they have all finished
  // (`finished` true). Returning true stops the jobs still running, as --runtime's end does:
  // they issue nothing more and count what completes (stonewalling across ranks).
  std::function<bool(bool finished)> poll;
};

// Runs the jobs.
Result<IoRun> RunIoJobs(const IoJobOptions& options, const IoHooks& hooks = {});

// The jobs' results as one (fio's group_reporting): bytes, IOs and latencies added up, the
// slowest job's runtime, the union of the measured windows, CPU added up.
JobResult MergeJobResults(const std::string& name, std::span<const JobResult> results);

// One entry of fio's "jobs" array (see JobsJson), and one job's block of the human report.
nlohmann::json JobJson(const IoJobOptions& o, const JobResult& r);
std::string JobText(const IoJobOptions& o, const JobResult& r);

// fio's JSON layout for the shared fields: {"jobs":[{"jobname","read":{io_bytes,bw_bytes,iops,
// clat_ns:{min,max,mean,stddev,percentile:{"99.000000":N}}}, "write":{...}}], "disk_util":[{
// name, read_ios, write_ios, read_ticks, in_queue, util, ...}]} (disk_util only with a device).
nlohmann::json JobsJson(const IoJobOptions& o, const IoRun& run);
// fio-like human summary, ending with the "disk stats" line.
std::string JobsText(const IoJobOptions& o, const IoRun& run);

}  // namespace ds::bench
