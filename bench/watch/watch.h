// `dsbench watch`: why is this training job waiting? (docs/watch.md)
//
// Watches a job (a command it starts, or a running PID) and every process below it: DataLoader
// workers and the node's MPI ranks included. It records a baseline at the start, a sample every
// interval (per process: RSS, PSS every 10th, VmPeak, majflt, /proc/PID/io, CPU time, state; the
// system's memory, swap and PSI; the block devices under the job's open files; the page-cache
// residency of those files), epochs marked by the job (src/epoch_marker.h), and at the end verdicts
// in the write-up's order (memory, IO, data wait, network), each with its numbers.
//
// Processes: a started command runs in watch's own process group (a terminal's Ctrl-C reaches
// both); watch is its child subreaper (PR_SET_CHILD_SUBREAPER), so that a worker orphaned by its
// parent is still seen and, on a stop, still ended. On SIGINT/SIGTERM (ds::StopRequested) watch
// sends SIGINT to the command, waits up to 5 s for the tree to exit, then SIGTERM, then SIGKILL,
// and writes the final report: no process is left behind. A --pid target is never signalled.
//
// Memory is bounded whatever the run's length: the series decimate (trend.h), the log is
// written as it goes. Thread-safety: RunWatch runs on the caller's thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench/watch/trend.h"
#include "src/diskstats.h"
#include "src/proc_stats.h"
#include "src/rpc_bill.h"
#include "src/status.h"
#include "src/system_probe.h"

namespace ds::bench {

struct WatchOptions {
  std::vector<std::string> command;  // argv to run, or empty with pid
  pid_t pid = 0;                     // a running process to watch
  double interval = 30;              // seconds between samples (> 0)
  std::string log;                   // JSON lines; empty: none
  // The epoch-marker file: set for the command (DSPACK_WATCH_EPOCHS); with --pid, the file the
  // job was started with. Empty: a temporary file for a command, none for --pid.
  std::string epochs;
  size_t leak_min_samples = 10;  // a leak verdict needs at least this many samples
  bool live = false;             // a one-line summary on stderr (a terminal only)
};

// Checks the options and opens nothing: usage errors (kInvalidArgument) before anything runs.
Status CheckWatch(const WatchOptions& o);

struct EpochStats {  // one epoch, summed over the processes that marked it
  int epoch = 0;
  double start = -1, end = -1;  // seconds since the watch started
  int markers = 0;              // processes that marked its end
  uint64_t samples = 0, bytes = 0;
  bool has_samples = false, has_bytes = false, has_wait = false;
  double data_wait_s = 0;   // summed over the marking processes
  uint64_t read_bytes = 0;  // the job's /proc/PID/io read_bytes over the epoch (storage reads)
  double residency_at_start = -1;  // page-cache share of the job's open files at its start
  uint64_t rss_end = 0, available_end = 0;
  double duration() const { return end > start && start >= 0 ? end - start : 0; }
  double wait_share() const;  // data_wait_s / (markers * duration), -1 when unknown
  double cold_share() const;  // read_bytes / bytes, -1 when unknown
};

struct Verdict {
  std::string kind;  // memory.leak, memory.swap, memory.low, io.device, io.cold_first_epoch,
                     // io.data_wait, network.nfs
  std::string text;  // one line, with its numbers
  nlohmann::json evidence;
};

struct ProcSeries {
  std::string comm;
  double first_seen = 0, last_seen = 0;
  Series rss;
  uint64_t vm_peak = 0, read_bytes = 0, majflt = 0;
  double cpu_seconds = 0;  // the last sample's
  bool exited = false;
};

struct DeviceActivity {  // a block device under the job's files, over the run
  std::string name;
  DiskStat first, last;
  double first_t = 0, last_t = 0;
  int intervals = 0, saturated = 0;  // intervals with util >= 90 % and r_await >= 20 ms
  double peak_util = 0, peak_r_await_ms = 0;
};

struct WatchResult {
  SystemProbe baseline_probe;  // the system probe of the job's working directory
  SystemCounters baseline, last;
  double seconds = 0;
  int samples = 0;
  std::optional<int> exit_status;  // the command's (128+N for a signal); unset for --pid
  bool stopped = false;            // ended by SIGINT/SIGTERM
  int max_processes = 0;
  Series job_memory;          // the sum of the processes' RSS (shared pages counted in each)
  uint64_t job_pss_last = 0;  // the sum of PSS at the last sample that read it (docs/watch.md)
  double job_pss_t = 0;       // that sample's time, s since the start
  std::map<pid_t, ProcSeries> processes;
  std::map<std::string, DeviceActivity> devices;
  std::vector<std::string> mounts;  // "MOUNT (fstype)" of the files the job had open
  std::vector<EpochStats> epochs;
  // The kernel NFS client's per-op counters by mount point (/proc/PID/mountstats), at the start
  // and the end.
  std::map<std::string, RpcBill> nfs_first, nfs_last;
  uint64_t min_available = 0;
  double cpu_seconds = 0;        // the job's, last sample summed over live processes
  double watch_cpu_seconds = 0;  // watch's own
  std::vector<Verdict> verdicts;
  std::vector<std::string> notes;
};

// Runs the watch to the end of the job (or a stop). The log's lines are written as it goes;
// errors opening the log or starting the command come back before anything runs.
Result<WatchResult> RunWatch(const WatchOptions& o);

// The baseline at a job's start (`dsbench probe --log`, the first line of watch's log): the
// system probe of `path`, the system's counters (memory, swap, PSI), the block device's activity
// since boot (iostat -x's first report) and nvidia-smi's GPUs where it exists.
nlohmann::json Baseline(const std::string& path, SystemProbe* probe, SystemCounters* counters);

// The verdicts (watch_report.cc), filled into r->verdicts.
void Judge(const WatchOptions& o, WatchResult* r);
nlohmann::json WatchJson(const WatchResult& r);
std::string WatchText(const WatchResult& r);

// One epoch-marker line into the epochs (by epoch number); t0: the watch's start (Unix s).
// Malformed lines are ignored (a marker never fails a watch).
void AddEpochLine(const std::string& line, double t0, std::vector<EpochStats>* epochs);

}  // namespace ds::bench
