// A job (src/job.h) of N threads in one process, for tests: each thread is a rank, and every
// collective waits for all N at a board, then each takes the board's copy. The MPI wire is
// tested end to end (tests/e2e/mpi*.sh); this runs the libraries' job code in the sanitizer
// builds, which are built without MPI.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "src/job.h"

namespace ds::test {

// Where the threads meet.
struct Board {
  explicit Board(int n) : n(n), slots(n) {}
  int n;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> slots, result;
  int arrived = 0;
  uint64_t generation = 0;
  // Called by the last thread to arrive at each collective, before anyone leaves it.
  std::function<void(std::string_view what)> on_step;
};

class ThreadJob : public Job {
 public:
  ThreadJob(Board* b, int rank) : b_(b), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return b_->n; }
  std::string host() const override { return "thread" + std::to_string(rank_); }
  Result<std::vector<std::string>> AllGather(const std::string& mine,
                                             std::string_view what) override {
    std::unique_lock lock(b_->mu);
    b_->slots[rank_] = mine;
    uint64_t gen = b_->generation;
    if (++b_->arrived == b_->n) {
      if (b_->on_step) b_->on_step(what);
      b_->result = b_->slots;
      b_->arrived = 0;
      b_->generation++;
      b_->cv.notify_all();
    } else {
      b_->cv.wait(lock, [&] { return b_->generation != gen; });
    }
    return b_->result;
  }

 private:
  Board* b_;
  int rank_;
};

}  // namespace ds::test
