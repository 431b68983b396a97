// fio's per-job logs for `dsbench io` (fio's write_bw_log, write_lat_log, write_iops_log,
// log_avg_msec; fio's HOWTO "Log File Formats"), which fio's fio2gnuplot and
// fio_generate_plots read.
//
// Files, per job clone N (1-based, as fio numbers them): PREFIX_bw.N.log, PREFIX_iops.N.log,
// PREFIX_lat.N.log, PREFIX_clat.N.log and PREFIX_slat.N.log (empty: slat is not measured apart).
// A line is "time_ms, value, ddir, bs, offset" with ddir 0 read, 1 write, 2 trim. bw (KiB/s) and
// iops are one line per direction per window of log_avg_msec (fio's 500 ms when 0). Latencies (ns)
// are one line per IO when log_avg_msec is 0, else the window's mean per direction (bs 0).
// time_ms counts from the job's start. Lines go through a buffered stream; a write error
// surfaces at Close() naming the file.
// Not thread-safe: one per job thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "src/status.h"

namespace ds::bench {

struct IoLogOptions {
  std::string bw, lat, iops;  // prefixes; empty: that log is not written
  unsigned avg_msec = 0;      // fio's log_avg_msec
  bool any() const { return !bw.empty() || !lat.empty() || !iops.empty(); }
};

class IoLogs {
 public:
  // Opens the logs of clone `clone` (0-based). An unwritable path is an error naming it.
  static Result<std::unique_ptr<IoLogs>> Open(const IoLogOptions& o, unsigned clone);
  ~IoLogs();

  // An IO done at `ms` after the job's start: direction (0 read, 1 write, 2 trim), bytes,
  // clat (ns).
  void Complete(uint64_t ms, int ddir, uint64_t bytes, uint64_t lat_ns);
  // Writes the windows that ended by `ms`; call now and then, and once at the end (`last`: the
  // partial window is written too when it holds IO).
  void Tick(uint64_t ms, bool last = false);
  Status Close();

 private:
  explicit IoLogs(const IoLogOptions& o) : o_(o) {}
  struct File {
    std::string path;
    std::FILE* f = nullptr;
  };
  Status OpenOne(File* f, const std::string& prefix, const char* kind, unsigned clone);
  void Line(File& f, uint64_t ms, uint64_t value, int ddir, uint64_t bs);

  IoLogOptions o_;
  File bw_, iops_, lat_, clat_, slat_;
  uint64_t window_ms_ = 500, window_start_ = 0;
  uint64_t bytes_[3] = {0, 0, 0}, ios_[3] = {0, 0, 0}, lat_sum_[3] = {0, 0, 0};
};

}  // namespace ds::bench
