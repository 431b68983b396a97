// `dsbench s3` (docs/s3.md#dsbench-s3): an object-storage benchmark in the spirit of MinIO's warp
// and elbencho. Keeps `concurrency` requests in flight on one thread (src/s3_multi.h) against an
// s3:// URL for a duration or a count of operations, and reports, per operation:
//   - ops/s and MB/s per time segment: the fastest, median and slowest whole segment (warp);
//   - TTFB and TTLB percentiles (p50, p90, p99, p99.9): from the request's start to the first
//     and the last byte of the answer;
//   - errors, with the first one's message.
// Under mpirun every rank runs its own load at once (a start barrier); rank 0 adds them up and
// gives elbencho's "first done" (every rank's work when the first rank finished, over the time
// to then) and "last done" (all of it, over the time to the last). A verdict in `dsbench
// storage`'s style: PASS when MB/s, ops/s and the TTFB p99 meet --min-bw, --min-iops and
// --max-ttfb-p99.
//
// Objects live under PREFIX/dsbench-s3.<pid>.r<rank>/ (URL's path + that), made for the run
// ("prepare": `objects` objects for get, stat, delete and mixed, uploaded at the same
// concurrency and not counted) and all deleted at the end unless `keep`, also after Ctrl-C. With
// `existing`, the objects already under PREFIX are read instead, and nothing is written.
// The CPU time of the run (user and system) is measured, for the CPU per request.
//
// Operations: get (whole objects, or `range` bytes at a random aligned offset), put (new
// objects), stat (HEAD), list (one ListObjectsV2 page of up to 1000 keys of the prefix), delete
// (each prepared object once; ends when none is left) and mixed (warp's mix: 45 % get, 30 %
// stat, 15 % put, 10 % delete, over a live set of objects).
//
// Errors: a bad URL or option is kInvalidArgument; a prepare that fails (wrong keys, no bucket,
// no server) is its one-line error from the backend. Errors during the run are counted and
// reported, not fatal, unless every request failed (then the first error).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/histogram.h"
#include "src/job.h"
#include "src/status.h"

namespace ds::bench {

enum class S3Op { kGet, kPut, kStat, kList, kDelete };
inline constexpr int kS3Ops = 5;
const char* S3OpName(S3Op op);

struct S3BenchOptions {
  std::string url;              // s3://BUCKET[/PREFIX][?query]
  std::string op = "get";       // get|put|stat|list|delete|mixed
  unsigned concurrency = 16;    // requests in flight (per rank)
  uint64_t obj_size = 1 << 20;  // bytes; with obj_size_min > 0, the largest of a log-uniform
  uint64_t obj_size_min = 0;    //   spread (warp's --obj.randsize)
  uint64_t objects = 0;         // prepared; 0: 2500, at most 1 GiB in all and `ops` (min 16)
  uint64_t range = 0;           // get: this many bytes per request at a random offset (0: whole)
  double duration = 10;         // seconds of the run (ops == 0)
  uint64_t ops = 0;             // > 0: this many operations per rank, not a duration
  double segment = 1;           // seconds per segment (a multiple of 0.1)
  bool keep = false;
  // Read the objects already under the URL's prefix (their listed sizes) instead of preparing
  // any: get, stat and list only; nothing is written or deleted (warp's --list-existing).
  bool existing = false;
  uint64_t seed = 1;
  // The verdict (0: not judged).
  uint64_t min_bw = 0;      // bytes/s, of all operations
  double min_iops = 0;      // ops/s, of all operations
  double max_ttfb_p99 = 0;  // seconds, of every operation but put
};

// Checks and fills in the defaults. kInvalidArgument naming the flag.
Status CheckS3Bench(S3BenchOptions* o);

// One operation's figures.
struct S3OpStats {
  uint64_t ops = 0, bytes = 0, errors = 0;
  LatencyHistogram ttfb, ttlb;  // ns, successful requests only
};

// What one rank did. The timeline is kept per 100 ms tick (kS3Tick) from `start_ns`, so that
// segments and "first done" can be read from it after the run.
inline constexpr double kS3Tick = 0.1;
struct S3BenchResult {
  int rank = 0;
  std::string host;
  std::string prefix;  // s3://BUCKET/KEY-PREFIX/ of this rank's objects
  S3OpStats op[kS3Ops];
  std::vector<uint64_t> tick_ops, tick_bytes;  // successful ops and their bytes per tick
  int64_t start_ns = 0, end_ns = 0;            // CLOCK_REALTIME: comparable across ranks
  double prepare_seconds = 0;
  uint64_t prepared = 0;
  uint64_t retries = 0;              // requests sent again (S3Client's counters)
  double cpu_user = 0, cpu_sys = 0;  // seconds of this rank's thread during the run
  std::string first_error;
  bool interrupted = false;
  std::string cleanup_note;  // a cleanup that failed, as a warning
  double seconds() const { return static_cast<double>(end_ns - start_ns) / 1e9; }
};

// Runs the benchmark as one rank of `job` (a plain process: a job of one). Every rank prepares,
// waits on a barrier, runs, and cleans up.
Result<S3BenchResult> RunS3Bench(const S3BenchOptions& o, Job& job);

// Segment figures: ops/s and bytes/s of each whole segment, sorted by ops/s.
struct S3Segment {
  double ops_per_s = 0, bytes_per_s = 0;
};
std::vector<S3Segment> S3Segments(const S3BenchResult& r, double segment);

// The job's figures from every rank's result (one rank: itself).
struct S3BenchSummary {
  S3OpStats op[kS3Ops];
  uint64_t ops = 0, bytes = 0, errors = 0;
  double seconds = 0;  // from the first start to the last end
  double ops_per_s = 0, bytes_per_s = 0;
  // elbencho's first done: what all ranks had done when the first finished.
  double first_seconds = 0, first_ops_per_s = 0, first_bytes_per_s = 0;
  std::vector<S3Segment> segments;  // the job's (ticks of all ranks added up), sorted
  double max_ttfb_p99 = 0;          // seconds, the worst op's but put's
  bool judged = false, bw_pass = true, iops_pass = true, ttfb_pass = true;
  bool pass() const { return bw_pass && iops_pass && ttfb_pass; }
};
S3BenchSummary SummarizeS3(const S3BenchOptions& o, const std::vector<S3BenchResult>& ranks);

// For the wire between ranks (Job::Gather) and back; kCorruption when malformed.
std::string EncodeS3Result(const S3BenchResult& r);
Result<S3BenchResult> DecodeS3Result(const std::string& text);

// {"s3": {options}, "ranks": [...], "summary": {...}, "verdict": {...}}
nlohmann::json S3BenchJson(const S3BenchOptions& o, const std::vector<S3BenchResult>& ranks,
                           const S3BenchSummary& s);
std::string S3BenchText(const S3BenchOptions& o, const std::vector<S3BenchResult>& ranks,
                        const S3BenchSummary& s);

}  // namespace ds::bench
