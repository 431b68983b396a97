// The --bwlimit token bucket, driven with synthetic times (no sleeping, no timing asserts).
#include "sync/token_bucket.h"

#include <catch2/catch.hpp>

TEST_CASE("the token bucket hands out rate bytes per second after its burst", "[sync]") {
  ds::sync::TokenBucket b(1000, 500);       // 1000 B/s, burst 500 B
  CHECK(b.Take(500, 0.0) == 0.0);           // the burst is free
  CHECK(b.Take(1000, 0.0) == Approx(1.0));  // a debt of 1000 B: wait 1 s
  CHECK(b.Take(0, 1.0) == 0.0);             // paid off
  CHECK(b.Take(250, 1.25) == 0.0);          // 250 B refilled in 0.25 s
  CHECK(b.Take(100, 1.25) == Approx(0.1));
  // Idle time refills at most the burst.
  CHECK(b.Take(500, 100.0) == 0.0);
  CHECK(b.Take(1, 100.0) == Approx(0.001));
  // Over a long run the bytes handed out stay within rate * time + burst.
  ds::sync::TokenBucket c(1 << 20, 64 << 10);
  double t = 0;
  for (int i = 0; i < 1000; ++i) t += c.Take(16 << 10, t);
  CHECK(t == Approx((1000.0 * (16 << 10) - (64 << 10)) / (1 << 20)));
}

TEST_CASE("rate 0 means unlimited", "[sync]") {
  ds::sync::TokenBucket b(0, 0);
  CHECK(b.Take(1ull << 40, 0.0) == 0.0);
}
