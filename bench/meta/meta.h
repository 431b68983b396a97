// `dsbench meta PATH`: an mdtest-style metadata benchmark (docs/dsbench.md).
//
// `threads` threads each work in their own subtree of a fresh directory
//
//   PATH/dsbench-meta.<pid>/t<N>/d<M>/f<K>      N < threads, K < files, M = K / files_per_dir
//
// so no directory holds more than files_per_dir files. The directories are made before the
// first phase (not timed). Then, in this fixed order, each selected phase runs with all threads
// released together by a barrier; its time is the wall time from that release until the last
// thread is done, and ops/s = ops / time:
//   create   openat(O_CREAT|O_EXCL) + write file_size bytes + close      1 op per file
//   stat     fstatat (the size is checked)                              1 op per file
//   read     openat(O_RDONLY) + read file_size bytes + close            1 op per file
//   readdir  list each own directory, counting entries (checked)        1 op per entry;
//            latency is per directory listed
//   remove   unlinkat each file, then rmdir each emptied d<M>           1 op per file
// File operations are relative to an open fd of the file's directory (openat / fstatat /
// unlinkat), so a latency is one lookup in that directory, not a walk from PATH. Names are
// computed from the indices, never stored: memory does not depend on the number of files.
// The stat and read phases see whatever the page cache holds; nothing is dropped.
//
// Safety: PATH must be an existing directory; free space and free inodes (statvfs) are checked
// against the plan before anything is made; only dsbench-meta.<pid> and what is inside it by
// the names above are removed (unless `keep`), also after an error or a stop. A stop request
// (bench/common/stop.h: SIGINT, SIGTERM) ends the current phase; the phases done so far and the
// partial one are returned, marked interrupted. An error in any thread (ENOSPC, EMFILE, a wrong
// count) stops all threads and is returned with the file named, after the cleanup.
//
// Thread-safety: RunMeta runs its own threads; call it from one thread at a time.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/diskstats.h"
#include "src/histogram.h"
#include "src/job.h"
#include "src/rpc_bill.h"
#include "src/status.h"

namespace ds::bench {

enum class MetaPhase { kCreate, kStat, kRead, kReaddir, kRemove };
inline constexpr int kMetaPhaseCount = 5;
inline constexpr std::array<MetaPhase, kMetaPhaseCount> kAllMetaPhases = {
    MetaPhase::kCreate, MetaPhase::kStat, MetaPhase::kRead, MetaPhase::kReaddir,
    MetaPhase::kRemove};
const char* MetaPhaseName(MetaPhase p);

inline constexpr uint64_t kDefaultMetaFiles = 1000;
inline constexpr unsigned kDefaultMetaThreads = 4;
inline constexpr uint64_t kDefaultMetaFileSize = 4096;
inline constexpr uint64_t kDefaultFilesPerDir = 1000;

struct MetaOptions {
  std::string path;
  uint64_t files = kDefaultMetaFiles;  // per thread
  unsigned threads = kDefaultMetaThreads;
  uint64_t file_size = kDefaultMetaFileSize;  // written at create, read back by read
  uint64_t files_per_dir = kDefaultFilesPerDir;
  std::vector<MetaPhase> phases;  // empty: all; REQUIRES: includes kCreate (see ParsePhases)
  bool keep = false;
  // Block device sampled in /proc/diskstats around each phase (SystemProbe::block_device);
  // empty: none.
  std::string disk_device;
  // One rank of an MPI job (docs/mpi.md). root_name: the run's directory under PATH (empty:
  // dsbench-meta.<pid>); root_exists: it was made by another rank (a directory shared by all
  // ranks, mdtest's default): neither made nor removed here; thread_base: the first thread
  // number, so that t<N> stays unique across ranks sharing the directory.
  std::string root_name;
  bool root_exists = false;
  unsigned thread_base = 0;
  // The job this run is a rank of (null: none). At the start of each phase, one thread (while
  // the others wait) agrees with every rank on the outcome so far (Job::Agree: an error of a
  // thread, or a stop: the phase's barrier). A failure on any rank stops the run on every rank
  // before the phase, each removing its own files, with that rank's status returned
  // (job->agreed_failure() says which).
  Job* job = nullptr;
};

// "create,stat,read,readdir,remove" or any subset that includes create, in any order; the
// result is in the fixed order. Errors name the unknown phase.
Result<std::vector<MetaPhase>> ParsePhases(std::string_view text);
// A count with an optional SI suffix: "2000", "100k" (100000), "1m" (1000000). `flag` names the
// option in errors.
Result<uint64_t> ParseCount(std::string_view text, std::string_view flag);

struct MetaPhaseResult {
  MetaPhase phase = MetaPhase::kCreate;
  uint64_t ops = 0;
  double seconds = 0;
  LatencyHistogram lat;  // per file operation; readdir: per directory listed
  bool interrupted = false;
  std::optional<DiskUtil> disk;
  // The phase's RPC bill (src/rpc_bill.h): set when PATH is an nfs:// URL or on a kernel NFS
  // mount.
  std::optional<RpcBill> rpc;
};

struct MetaResult {
  std::string root;  // PATH/dsbench-meta.<pid>
  uint64_t dirs_per_thread = 0;
  std::vector<MetaPhaseResult> phases;  // those that ran, in order
  bool interrupted = false;
  bool kept = false;
  std::string cleanup_note;  // set when something of ours could not be removed
};

// Checks the options, that PATH is a directory, and free space and inodes (statvfs) for the
// plan. RunMeta does the same first; a CLI calls it to refuse before printing anything.
Status CheckMetaPlan(const MetaOptions& options);
Result<MetaResult> RunMeta(const MetaOptions& options);

std::string MetaRoot(const MetaOptions& o);  // PATH/dsbench-meta.<pid>
// What a run of o makes and removes: MetaRoot(o), or (root_exists) its threads' directories in it.
std::vector<std::string> MetaOwnedPaths(const MetaOptions& o);
uint64_t MetaDirsPerThread(const MetaOptions& o);

// The run's plan in one line ("2 threads x 2000 files of 4.0 KiB, ... in ROOT").
std::string MetaPlanText(const MetaOptions& o);
// {"files_per_thread","threads","file_size","files_per_dir","dirs_per_thread","root",
//  "interrupted","phases":[{"name","ops","seconds","ops_per_sec","lat_per","interrupted",
//  "lat_ns":{min,max,mean,stddev,N,percentile:{"50.000000":ns,..}},"disk_util":[..]}]}
nlohmann::json MetaJson(const MetaOptions& o, const MetaResult& r);
// fio-like: per phase "create: ops/s=12.3k (4000 ops/325msec)", latency lines, disk stats.
std::string MetaText(const MetaOptions& o, const MetaResult& r);

}  // namespace ds::bench
