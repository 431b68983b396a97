#include "sync/token_bucket.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace ds::sync {

TokenBucket::TokenBucket(uint64_t rate, uint64_t burst)
    : rate_(rate), burst_(static_cast<double>(burst)), tokens_(static_cast<double>(burst)) {}

double TokenBucket::Take(uint64_t n, double now) {
  if (rate_ == 0) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  if (last_ >= 0 && now > last_) {
    tokens_ = std::min(burst_, tokens_ + (now - last_) * static_cast<double>(rate_));
  }
  if (now > last_) last_ = now;
  tokens_ -= static_cast<double>(n);
  return tokens_ >= 0 ? 0.0 : -tokens_ / static_cast<double>(rate_);
}

void TokenBucket::Acquire(uint64_t n) {
  if (rate_ == 0) return;
  double now =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  double wait = Take(n, now);
  if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
}

}  // namespace ds::sync
