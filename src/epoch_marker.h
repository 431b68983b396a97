// Epoch markers: how a training job tells `dsbench watch` where its epochs begin and end
// (docs/watch.md#epoch-markers). `watch` sets DSPACK_WATCH_EPOCHS to a file; each marking
// process appends one JSON line per event, in a single write(2) to an O_APPEND descriptor, so
// that the lines of many processes (ranks, workers) never interleave:
//
//   {"event":"start","epoch":0,"pid":123,"t":1765100000.25}
//   {"event":"end","epoch":0,"pid":123,"t":1765100042.5,"samples":50000,"bytes":5.1e9,
//    "data_wait_s":12.25}
//
// t is the Unix time in seconds; samples, bytes and data_wait_s (the time spent waiting for the
// loader's next batch) are the marking process's own for that epoch, and optional. dsbench
// replay and dspack.torch (python/dspack/torch/_watch.py) write these lines; any program can.
// Without the variable, marking does nothing. Marking never fails the job: a write error is
// ignored. Thread-safety: MarkEpoch may be called from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ds {

inline constexpr const char* kWatchEpochsEnv = "DSPACK_WATCH_EPOCHS";

struct EpochMark {
  bool start = true;  // false: the end of the epoch
  int epoch = 0;
  std::optional<uint64_t> samples, bytes;
  std::optional<double> data_wait_s;
};

void MarkEpoch(const EpochMark& mark);
inline void MarkEpochStart(int epoch) {
  EpochMark m;
  m.epoch = epoch;
  MarkEpoch(m);
}

}  // namespace ds
