// One clone of a `dsbench io` job: its thread's IO loop (bench/io/io_job.h runs one per clone).
//
// The loop keeps `iodepth` requests in flight on its own engine (src/io_engine.h) over the
// clone's files (fio's nrfiles: one fd each, an IoPattern each; file_service_type picks the file
// of each IO), paced by rate/rate_iops, with fsync=N, thinktime, ramp_time and runtime as fio
// has them; it fills JobResult (clat from submission to completion, fio's 500 ms bw/iops
// windows, depth maps, CPU and faults of the thread) and, with verify, reads back what it wrote.
// LiveCounters are bumped at each completion for the caller's ETA and status lines.
//
// Thread-safety: RunClone runs on its own thread; `stop` and `live` are the only state shared.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <string>

#include "bench/io/io_job.h"

namespace ds::bench {

struct LiveCounters {
  std::atomic<uint64_t> bytes{0};  // completed, both directions, ramp included
  std::atomic<uint64_t> ios{0};
};

// The clock a clone paces and times itself by (steady time in ns): rate, rate_iops, ramp_time,
// thinktime, startdelay and runtime all read it. Tests give a virtual one.
class IoClock {
 public:
  virtual ~IoClock() = default;
  virtual int64_t Now() const;
  // Sleeps until `until` or a stop (StopRequested or `stop`); false when stopped.
  virtual bool SleepUntil(int64_t until, const std::atomic<bool>& stop) const;
};
const IoClock& SteadyIoClock();

// `stop`: the run failed elsewhere (a job that could not start) or the caller stopped it
// (IoHooks::poll): stop issuing, drain and count what completes. `files`: the clone's test files
// (REQUIRES: nrfiles of them, each holding offset + size bytes, or fewer for a write job).
Status RunClone(const IoJobOptions& o, std::span<const std::string> files, unsigned clone,
                const std::atomic<bool>& stop, LiveCounters* live, JobResult* out,
                const IoClock& clock = SteadyIoClock());

}  // namespace ds::bench
