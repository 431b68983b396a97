// What `dsbench io` shows while its jobs run (IoHooks::live, bench/io/io_job.h): fio's ETA line
// (--eta: on stderr; auto = when stderr is a terminal, redrawn in place; always = a line a second
// elsewhere) and fio's --status-interval reports (text on stdout: each clone's bytes and IOs so
// far and its rate over the interval). Pure formatting, given the counters and the clock.
//
// Thread-safety: one LiveReport per run, called from the run's own thread.
#pragma once

#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "bench/io/fio_options.h"
#include "bench/io/io_job.h"

namespace ds::bench {

// "Jobs: 4: [45.3%][1.5 GB/s][380.2k IOPS][eta 00m:11s]": the jobs still running, how far they
// are (bytes of their target, or time of their runtime, whichever is further), the rate over
// `window` seconds (deltas of bytes and IOs), and the time left at that rate.
std::string EtaLine(std::span<const LiveJob> jobs, double seconds, uint64_t window_bytes,
                    uint64_t window_ios, double window);

// "status at 5.0s:" then a line per clone: "  NAME.N: 1.2 GiB (310k IOs) so far; 1.1 GB/s, 280k
// IOPS over the last 5.0s". `before`: the counters at the last report (same order).
std::string StatusReport(std::span<const LiveJob> jobs, std::span<const LiveJob> before,
                         std::span<const IoJobOptions> specs, double seconds, double interval);

class LiveReport {
 public:
  LiveReport(const FioOutput& out, std::span<const IoJobOptions> specs, bool stderr_tty)
      : out_(out), specs_(specs), tty_(stderr_tty) {}
  // Whether anything is shown at all (the hook need not be installed otherwise).
  bool active() const;
  void Update(std::span<const LiveJob> jobs, double seconds, bool finished);

 private:
  const FioOutput& out_;
  std::span<const IoJobOptions> specs_;
  bool tty_;
  std::vector<LiveJob> last_eta_, last_status_;
  double last_eta_at_ = 0, last_status_at_ = 0;
  bool drawn_ = false;
};

}  // namespace ds::bench
