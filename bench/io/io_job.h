// fio-compatible IO jobs for `dsbench io` and `dsbench storage` (docs/dsbench.md).
//
// Option names and semantics follow fio's HOWTO (bench/io/fio_options.h maps fio's options onto
// IoJobOptions). Each job clone (numjobs) runs on its own thread with its own IO engine
// (src/io_engine.h) and keeps `iodepth` requests in flight; completion latency (submission to
// completion, fio's clat) goes into a LatencyHistogram after ramp_time. Rates use fio's formulas
// (bytes*1000/runtime_ms), and a group's runtime is its slowest job's.
//
// Test files: when PATH is a directory, each clone's file is PATH/<name>.<clone>.0 (fio's
// naming) unless `file_name` names one file for all; a file that is not there is created by the
// run (incompressible content, checked against free space first) and removed afterwards unless
// `keep`; so is PATH itself when `create_file` (fio's filename) and it is missing. An existing
// regular file is used as is and never removed; it must hold `size` bytes for reads. dsbench
// never writes to a file it did not create: a job that writes (write, randwrite, rw, randrw) to
// an existing PATH, or to an existing PATH/<name>.<clone>.0 without dsbench's mark (an xattr it
// sets on the files it lays out), or that would lay such a file out again because it is too
// short, is refused unless allow_overwrite; a fio job file is never a target
// (LooksLikeJobFile). A block device is refused unless allow_device.
//
// Ranges: numjobs 1..kMaxJobs (fio's own limit on jobs), iodepth 1..kMaxIodepth, rwmixread
// 0..100; a thread that cannot be started is an error (the jobs already running stop, and a
// test file the run created is removed), as is a depth the engine refuses.
//
// Disk stats: while the jobs run (after the test file is laid out, ramp_time included, as fio
// does) /proc/diskstats is sampled for `disk_device` (src/diskstats.h) and reported as fio's
// disk_util.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "bench/io/io_logs.h"
#include "bench/io/io_pattern.h"
#include "bench/io/io_verify.h"
#include "src/diskstats.h"
#include "src/histogram.h"
#include "src/job.h"
#include "src/status.h"

namespace ds::bench {

inline constexpr unsigned kMaxJobs = 4096;     // fio's REAL_MAX_JOBS
inline constexpr unsigned kMaxIodepth = 4096;  // per job

// kRw: fio's rw/readwrite, sequential offsets with each IO a read or a write by rwmixread.
// kTrim, kRandTrim: fio's trim/randtrim, BLKDISCARD of each block on a block device (done in
// the job's thread, one at a time, as fio's engines do it).
enum class RwMode { kRead, kWrite, kRandRead, kRandWrite, kRandRw, kRw, kTrim, kRandTrim };
inline bool IsRandom(RwMode m) {
  return m == RwMode::kRandRead || m == RwMode::kRandWrite || m == RwMode::kRandRw ||
         m == RwMode::kRandTrim;
}
inline bool Trims(RwMode m) { return m == RwMode::kTrim || m == RwMode::kRandTrim; }
inline bool Writes(RwMode m) { return m != RwMode::kRead && m != RwMode::kRandRead && !Trims(m); }
inline bool Reads(RwMode m) { return m != RwMode::kWrite && m != RwMode::kRandWrite && !Trims(m); }

// fio's file_service_type: how a job with nrfiles files picks the file of each IO.
enum class FileService { kRoundRobin, kRandom, kSequential };
inline constexpr unsigned kMaxFilesPerJob = 1'000'000;

// fio's fallocate: how a test file the run lays out is allocated before it is written.
enum class FallocateMode { kNone, kPosix, kKeep, kNative, kTruncate };

struct IoJobOptions {
  std::string name = "dsbench";
  std::string path;
  RwMode rw = RwMode::kRead;
  uint64_t bs = 4096;  // every IO's size; with bsrange/bssplit (`sizes`) the smallest
  // fio's bsrange/bssplit (bench/io/io_pattern.h); fixed(): every IO is `bs`.
  BlockSizes sizes;
  OffsetDistribution distribution;  // random offsets: fio's random_distribution
  BlockSizes IoSizes() const { return sizes.fixed() ? BlockSizes{bs, bs, {}} : sizes; }
  unsigned iodepth = 1;
  unsigned numjobs = 1;
  bool direct = false;
  uint64_t size = 0;  // bytes of the file each job works on (and does, unless time_based)
  // Where in the file the jobs' region of `size` bytes starts (fio's offset): an MPI rank's
  // slice of one shared file (fio's offset_increment, IOR without -F). An existing file must
  // hold offset + size bytes; a file the run creates holds exactly that.
  uint64_t offset = 0;
  // The test file's name when PATH is a directory, shared by all clones; empty: a file per
  // clone, <name>.<clone>.0 (fio's naming).
  std::string file_name;
  // fio's nrfiles: files per clone, <name>.<clone>.<file> in a directory, each of `size` bytes
  // (fio's filesize; fio's size is the job's total, size / nrfiles each); file_service picks
  // the file of each IO, moving on every file_service_n IOs (fio's roundrobin:N, random:N).
  unsigned nrfiles = 1;
  FileService file_service = FileService::kRoundRobin;
  unsigned file_service_n = 1;
  double runtime = 0;       // seconds; 0 = until `size` is done
  bool time_based = false;  // keep going over the file until runtime
  double ramp_time = 0;     // seconds not counted
  std::string ioengine = "psync";
  // ioengine=nfs: the export, nfs://SERVER/EXPORT[/DIR][?ARGS] (fio's nfs_url); PATH is inside it.
  std::string nfs_url;
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

  // fio's job options beyond the first set (bench/io/fio_options.h sets them from job files).
  bool create_file = false;  // PATH names a file that may not exist yet (fio's filename)
  uint64_t io_size = 0;      // bytes each job transfers; 0: size x loops
  unsigned loops = 1;
  double startdelay = 0;            // seconds before the job starts
  double thinktime = 0;             // seconds after each completion before the next IO is issued
  uint64_t rate = 0;                // bytes/s cap per job (0: none)
  uint64_t rate_iops = 0;           // IOPS cap per job (0: none)
  unsigned fsync_every = 0;         // fsync the file after every N writes (fio's fsync=N)
  bool end_fsync = false;           // fsync the file when the job is done
  bool randrepeat = true;           // false: the random offsets are seeded from the clock
  std::vector<int> cpus;            // cpus_allowed (empty: any)
  std::vector<double> percentiles;  // percentile_list (empty: fio's default list)
  bool lat_percentiles = false;     // lat's percentiles too (lat is clat here: no slat apart)
  // fio's gtod_reduce: no clock read per IO, so no latencies and no bw/iops samples; the
  // totals (bytes, IOs, bandwidth, IOPS over the runtime) stay.
  bool gtod_reduce = false;
  bool hipri = false;  // io_uring: polled completions (IORING_SETUP_IOPOLL; needs direct=1)
  FallocateMode fallocate = FallocateMode::kNative;
  // fio's verify (bench/io/io_verify.h): written blocks carry a checksum and are read back and
  // checked when the job is done (not counted in its figures). Writes only, fixed bs.
  VerifyKind verify = VerifyKind::kNone;
  IoLogOptions logs;       // fio's write_bw_log, write_lat_log, write_iops_log (bench/io/io_logs.h)
  bool stonewall = false;  // wait for the jobs before this one (RunIoJobs' caller does)
  bool new_group = false;
  unsigned groupid = 0;
  // The options as given, echoed as fio's "job options" ({"bs": "4k"}) when the job came from
  // fio's language (echo_given: bench/io/fio_options.h; a section may give none); otherwise
  // (dsbench storage's jobs) the report derives them from the fields.
  std::vector<std::pair<std::string, std::string>> given;
  bool echo_given = false;

  // Every check of the options against each other and their ranges, in one place: positive
  // sizes and counts, ranges, O_DIRECT alignment, verify's needs, hipri's engine, gtod_reduce
  // against the logs, time_based's runtime. kInvalidArgument naming the fields. The fio parser
  // calls it for each job it builds (the job's name prefixed), RunIoJobs for every job again.
  // What only the file system can tell (space, an existing file, O_DIRECT refused) is checked
  // where the file is opened (PrepareTestFile, the worker).
  Status Validate() const;
};

// fio's bw/iops samples: one per 500 ms window of a job (fio's bw_avg_time/iops_avg_time).
struct SampleStats {
  uint64_t n = 0;
  double min = 0, max = 0, mean = 0, m2 = 0;  // m2: sum of squared deviations (Welford)
  void Add(double v);
  // A job that ran beside this one (fio's group_reporting, sum_stat's pure sum): the group's
  // rate is the sum of its jobs', so min, max and mean add up, the variances add, and the
  // sample counts add.
  void AddParallel(const SampleStats& o);
  double stddev() const;
};

struct DirStats {
  uint64_t io_bytes = 0;
  uint64_t ios = 0;
  uint64_t short_ios = 0;  // completed with fewer bytes than asked
  LatencyHistogram clat;
  SampleStats bw_kib, iops;  // per-window KiB/s and IOPS
};

// fio's depth maps (stat.c): how many IOs were in flight when each was issued (buckets 1, 2,
// 4, 8, 16, 32, >=64), and how many one submit / one reap handled (0, 1-4, 5-8, ..., >=64).
struct DepthStats {
  std::array<uint64_t, 7> level{}, submit{}, complete{};
  void Merge(const DepthStats& o);
};

struct JobResult {
  std::string name;
  unsigned jobs = 1;  // > 1 for a group-reported result
  double runtime_ms = 0;
  DirStats read, write, trim;
  double usr_cpu = 0, sys_cpu = 0;  // % of one core over the runtime, as fio prints
  // The measured window on the steady clock (ns): after ramp_time, to the last completion. A
  // group's is the union of its jobs'. Ranks of an MPI job compare them after a common barrier.
  int64_t start_ns = 0, end_ns = 0;
  size_t spec = 0;     // which of RunIoJobs' job specs this is a clone of
  double elapsed = 0;  // seconds from the job's thread start to its end (fio's elapsed)
  uint64_t ctx = 0, majf = 0, minf = 0;  // context switches and page faults (getrusage)
  DepthStats depth;
  uint64_t syncs = 0;            // fsyncs issued (fio's sync block)
  uint64_t verified_blocks = 0;  // verify: blocks read back and checked after the job
  // Every IO the engine completed, the ramp's too: what a count taken over the whole run (the
  // RPC bill) is divided by.
  uint64_t engine_ios = 0;
  LatencyHistogram sync_lat;
};

Result<RwMode> ParseRw(const std::string& text);
const char* RwName(RwMode m);

struct IoRun {
  std::vector<JobResult> jobs;   // one per job, or one merged result with group_reporting
  std::optional<DiskUtil> disk;  // disk_device's activity while the jobs ran, if it has one
  // With IoHooks::job: when this rank left the start barrier (steady clock, ns, as
  // JobResult::start_ns); with several stonewalled sets, the last set's.
  int64_t start_barrier_ns = 0;
};

// True when `path` names a fio job file: it ends in ".fio", or it is a regular file whose first
// non-blank byte is '['. Such a file is never a test target: PrepareTestFile refuses it, even
// with allow_overwrite (`dsbench io job.fio --rw write` once overwrote the job file).
bool LooksLikeJobFile(const std::string& path);

struct TestFile {
  std::string path;
  bool created = false;  // by this call: the caller removes it (RunIoJobs does, unless keep)
};
// Resolves PATH to the test file, creating and filling it (offset + size bytes) when PATH is a
// directory and the file is not there yet; sets o.size from an existing file when it is 0. The
// checks of the file comment apply. RunIoJobs calls it; an MPI run's rank 0 calls it to lay out
// the one file that every rank shares.
Result<TestFile> PrepareTestFile(IoJobOptions& o);

// ioengine=nfs (bench/io/remote_files.cc): the test files live on the export that nfs_url names,
// and PATH (fio's filename / directory) is inside it; TestFile::path is then a path of that
// URL's storage. RemoteJobUrl joins nfs_url and path; RemoteTargetIsDir says whether the job's
// PATH is a directory there; PrepareRemoteTestFile is PrepareTestFile's counterpart (a missing
// file is laid out through the storage and published whole; an existing one is the user's:
// written only with allow_overwrite); RemoveRemoteTestFile removes one it made.
std::string RemoteJobUrl(const IoJobOptions& o, const std::string& path);
Result<bool> RemoteTargetIsDir(const IoJobOptions& o);
Result<TestFile> PrepareRemoteTestFile(IoJobOptions& o);
void RemoveRemoteTestFile(const IoJobOptions& o, const std::string& path);

// One clone's progress while it runs (IoHooks::live).
struct LiveJob {
  size_t spec = 0;  // which job
  unsigned clone = 0;
  uint64_t bytes = 0, ios = 0;
  uint64_t target_bytes = 0;  // what it transfers (io_size, or size x loops); 0: time_based
  double runtime = 0;         // its time limit (s; 0: none)
};

// For a run that is one rank of a job (the CLI hands it mpi::World, a Job; bench/ itself never
// links MPI), and callbacks into the caller's thread. All optional.
struct IoHooks {
  // The job this run is a rank of. Once the test files are laid out, or failed to be, every
  // rank agrees on the outcome (Job::Agree, "every rank's test file": the start barrier)
  // before any job starts and before the disk is sampled; a failure on any rank ends the run
  // on every rank with that rank's status (job->agreed_failure() says which), each rank's own
  // files removed. A path missing on one rank stops all of them.
  Job* job = nullptr;
  // About every millisecond while the jobs run, and once more when they have all finished
  // (`finished` true). Returning true stops the jobs still running, as --runtime's end does:
  // they issue nothing more and count what completes (stonewalling across ranks).
  std::function<bool(bool finished)> poll;
  // About every 100 ms while the jobs run (fio's ETA line, status-interval): what the clones
  // have completed so far (bytes, IOs, both directions, ramp included) and the seconds since
  // they started; once more with `finished` true.
  std::function<void(std::span<const LiveJob> jobs, double seconds, bool finished)> live;
};

// Runs the jobs: every clone (numjobs) of every spec at once, on its own thread. A clone has a
// file of its own (<name>.<clone>.0) when the spec's PATH is a directory and names no file;
// otherwise the spec's clones share its file. `stonewall` is the caller's business: it runs the
// jobs after a stonewall in a later call. With group_reporting, each groupid's clones are
// merged into one result.
Result<IoRun> RunIoJobs(std::span<const IoJobOptions> specs, const IoHooks& hooks = {});
Result<IoRun> RunIoJobs(const IoJobOptions& options, const IoHooks& hooks = {});

// The jobs' results as one (fio's group_reporting): bytes, IOs and latencies added up, the
// slowest job's runtime, the union of the measured windows, CPU added up.
JobResult MergeJobResults(const std::string& name, std::span<const JobResult> results);

// The report (bench/io/io_report.cc). fio 3.33's JSON layout, every key of it: "fio version",
// "timestamp", "timestamp_ms", "time", "global options" (when given), "jobs": [{jobname,
// groupid, error, eta, elapsed, "job options" (as given), read/write/trim: {io_bytes, bw_bytes,
// iops, runtime, total_ios, short_ios, drop_ios, slat_ns, clat_ns: {min, max, mean, stddev, N,
// percentile: {"99.000000": ns}, bins (json+)}, lat_ns, bw_min/max/agg/mean/dev/samples,
// iops_min/max/mean/stddev/samples}, sync, usr_cpu, sys_cpu, ctx, majf, minf, iodepth_level/
// submit/complete, latency_ns/us/ms, latency_depth/target/percentile/window}], "disk_util"
// (only with a device). Figures dsbench does not measure apart have fio's empty values: slat
// (N = 0; clat starts at submission, so lat = clat) and trim (no trims are issued).
// `plus`: fio's json+ (clat bins). group_kib: the job's group's read/write KiB/s (bw_agg).
nlohmann::json JobJson(const IoJobOptions& o, const JobResult& r, bool plus,
                       std::array<double, 3> group_kib);
nlohmann::json JobJson(const IoJobOptions& o, const JobResult& r);  // its own group
std::string JobText(const IoJobOptions& o, const JobResult& r);

// A run's results; each JobResult's `spec` indexes `specs`.
nlohmann::json JobsJson(std::span<const IoJobOptions> specs, const IoRun& run, bool plus,
                        const std::vector<std::pair<std::string, std::string>>& global_given);
nlohmann::json JobsJson(const IoJobOptions& o, const IoRun& run);
// fio-like human summary, ending with the "disk stats" line.
std::string JobsText(std::span<const IoJobOptions> specs, const IoRun& run);
// fio's terse v3: one semicolon-separated line per job (130 fields with a disk, 121 without),
// fields in fio's order and units (KiB, KiB/s, usec); slat is 0 (not measured apart).
std::string JobTerse(const IoJobOptions& o, const JobResult& r, std::array<double, 3> group_kib,
                     const std::optional<DiskUtil>& disk);
std::string JobsTerse(std::span<const IoJobOptions> specs, const IoRun& run);
std::string JobsText(const IoJobOptions& o, const IoRun& run);

}  // namespace ds::bench
