// TokenBucket: the --bwlimit rate limiter shared by every copy thread.
//
// Tokens are bytes. The bucket refills at `rate` bytes per second up to `burst` bytes; Take(n)
// removes n tokens at once (the balance may go negative: a debt) and returns how long the
// caller must sleep before using the bytes, so over any interval the bytes handed out stay
// within rate * interval + burst. Take() is pure given `now` (unit-tested with synthetic
// times); Acquire() reads the steady clock and sleeps. A rate of 0 means unlimited.
//
// Thread-safety: Take/Acquire may be called from any thread (internally locked).
#pragma once

#include <cstdint>
#include <mutex>

namespace ds::sync {

class TokenBucket {
 public:
  // REQUIRES: burst > 0 when rate > 0.
  TokenBucket(uint64_t rate, uint64_t burst);

  // Seconds the caller must wait before using n bytes taken at time `now` (seconds, any epoch,
  // non-decreasing across calls).
  double Take(uint64_t n, double now);
  // Take(n, steady clock) and sleep for the returned time.
  void Acquire(uint64_t n);
  uint64_t rate() const { return rate_; }

 private:
  std::mutex mu_;
  uint64_t rate_;
  double burst_;
  double tokens_;
  double last_ = -1;
};

}  // namespace ds::sync
