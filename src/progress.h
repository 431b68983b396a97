// A one-line progress bar for long jobs: "[=====>    ] 52% 10.4k/20.0k files 3.1k files/s
// 340.2 MB/s ETA 3.10 s".
//
// Enabled only when requested and stderr is a terminal (isatty(2)); otherwise every call is a
// cheap no-op, so scripts and logs never see carriage returns. Update() may be called from any
// thread at any rate: it redraws at most every 100 ms. Finish() clears the line.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace ds {

class Progress {
 public:
  // total_items may be 0 when unknown (no percentage, no ETA).
  Progress(bool want, std::string unit, uint64_t total_items);
  ~Progress() { Finish(); }
  void Update(uint64_t items_done, uint64_t bytes_done);
  void Finish();
  bool enabled() const { return enabled_; }

 private:
  void Draw(uint64_t items, uint64_t bytes, bool force);
  bool enabled_;
  std::string unit_;
  uint64_t total_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<int64_t> last_draw_ns_{-1000000000};  // the first update draws at once
  std::mutex mu_;
  bool finished_ = false;
};

}  // namespace ds
