// Block device activity from /proc/diskstats, as iostat -x and fio's disk_util report it.
//
// /proc/diskstats has one line per block device (kernel Documentation/admin-guide/iostats.rst):
//   major minor name  reads reads_merged sectors_read read_ms  writes writes_merged
//   sectors_written write_ms  in_flight io_ms weighted_io_ms  [discard x4] [flush x2]
// Sectors are 512 bytes whatever the device's block size; the *_ms fields are cumulative. Only
// the first 11 counters are used, so kernels before 4.18 (no discard fields) parse the same.
//
// DiskUtil is the difference between two samples of one device, with fio's names and formulas
// (util = 100 * io_ms / elapsed ms, capped at 100) and iostat's derived figures
// (r_await = delta read_ms / delta reads, ...). DiskSampler takes a sample when it is built,
// then once per interval in a background thread (for the busiest interval's util), and a last
// one at Stop(); its memory does not grow with the run's length.
//
// Thread-safety: the parsers and DiskUtil are values. A DiskSampler is driven from one thread
// (construct, Stop, destroy); its own sampling thread is internal.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "src/status.h"

namespace ds {

// One line of /proc/diskstats.
struct DiskStat {
  unsigned major = 0, minor = 0;
  std::string name;
  uint64_t reads = 0, read_merges = 0, read_sectors = 0, read_ms = 0;
  uint64_t writes = 0, write_merges = 0, write_sectors = 0, write_ms = 0;
  uint64_t in_flight = 0, io_ms = 0, weighted_io_ms = 0;
};

// Parses /proc/diskstats text; lines with fewer than 14 fields are skipped.
std::vector<DiskStat> ParseDiskStats(std::string_view text);
// The line of `device` (e.g. "vda") in `file`; kNotFound if there is none.
Result<DiskStat> ReadDiskStat(const std::string& device,
                              const std::string& file = "/proc/diskstats");

// A device's activity between two samples.
struct DiskUtil {
  std::string name;
  uint64_t read_ios = 0, write_ios = 0, read_merges = 0, write_merges = 0;
  uint64_t read_sectors = 0, write_sectors = 0;
  uint64_t read_ticks = 0, write_ticks = 0;  // ms spent on reads / writes (summed over requests)
  uint64_t io_ticks = 0;                     // ms the device had at least one request in flight
  uint64_t in_queue = 0;                     // weighted ms (time_in_queue)
  double msec = 0;                           // wall time between the samples
  double peak_util = -1;  // busiest sampling interval's util, -1 if there was none

  // Adds the counters of a later interval of the same device (a run in several parts).
  void Add(const DiskUtil& later);
  double util() const;  // % of msec the device was busy, at most 100 (fio's formula)
  double reads_per_sec() const;
  double writes_per_sec() const;
  double read_bytes_per_sec() const;
  double write_bytes_per_sec() const;
  double r_await_ms() const;  // mean ms per completed read (iostat), 0 without reads
  double w_await_ms() const;

  // fio's disk_util entry: name, read_ios, write_ios, read_sectors, write_sectors,
  // read_merges, write_merges, read_ticks, write_ticks, in_queue, util; plus dsbench's msec,
  // peak_util (when sampled) and iostat's r_await / w_await (ms).
  nlohmann::json ToJson() const;
  // "disk stats (vda): util=87.3% r/s=12.3k rMB/s=48.2 r_await=0.41ms w/s=... ".
  std::string ToText() const;
};

// after - before over `msec` of wall time (counters that went backwards count as 0).
DiskUtil DiskDelta(const DiskStat& before, const DiskStat& after, double msec);

// The human line for a run: DiskUtil::ToText(), or "disk stats: n/a (no block device behind
// PATH)" when there is nothing to report.
std::string DiskUtilText(const std::optional<DiskUtil>& util);

class DiskSampler {
 public:
  // Samples `device` now and then every `interval`; an empty device, or one with no line in
  // `file`, makes a sampler that does nothing and whose Stop() returns nullopt.
  explicit DiskSampler(std::string device,
                       std::chrono::milliseconds interval = std::chrono::seconds(1),
                       std::string file = "/proc/diskstats");
  DiskSampler(const DiskSampler&) = delete;
  DiskSampler& operator=(const DiskSampler&) = delete;
  ~DiskSampler();

  // Takes the last sample and returns the activity since construction. Call once.
  std::optional<DiskUtil> Stop();

 private:
  using Clock = std::chrono::steady_clock;
  void Loop();

  std::string device_, file_;
  std::chrono::milliseconds interval_;
  std::optional<DiskStat> first_;
  Clock::time_point first_at_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;      // guarded by mu_
  double peak_util_ = -1;  // guarded by mu_
  std::thread thread_;
};

}  // namespace ds
