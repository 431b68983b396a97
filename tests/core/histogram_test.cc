#include "src/histogram.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "src/random.h"

using namespace ds;

TEST_CASE("histogram percentiles are within 1% of an exact sort", "[core]") {
  Rng rng(11);
  for (double median_ns : {800.0, 90e3, 4e6}) {  // ~1 us, ~100 us, ~4 ms
    LatencyHistogram h;
    std::vector<uint64_t> v;
    for (int i = 0; i < 200000; i++) {
      auto ns = static_cast<uint64_t>(median_ns * std::exp(0.8 * rng.Normal()));
      v.push_back(ns);
      h.Add(ns);
    }
    std::sort(v.begin(), v.end());
    for (double p : LatencyHistogram::DefaultPercentiles()) {
      auto rank = static_cast<size_t>(std::ceil(p / 100 * static_cast<double>(v.size())));
      double exact = static_cast<double>(v[rank - 1]);
      double got = static_cast<double>(h.Percentile(p));
      INFO("median " << median_ns << " p" << p << " exact " << exact << " got " << got);
      CHECK(std::abs(got - exact) <= 0.01 * exact + 1);
    }
    CHECK(h.count() == v.size());
    CHECK(h.min() == v.front());
    CHECK(h.max() == v.back());
  }
}

TEST_CASE("histogram buckets: exact below 128, 64 per power of two above", "[core]") {
  for (uint64_t x : {0ull, 1ull, 63ull, 127ull})
    CHECK(LatencyHistogram::BucketValue(LatencyHistogram::Index(x)) == x);
  for (uint64_t x : {128ull, 1000ull, 123456ull, 987654321ull, 1ull << 40}) {
    uint64_t b = LatencyHistogram::BucketValue(LatencyHistogram::Index(x));
    CHECK(std::abs(static_cast<double>(b) - static_cast<double>(x)) <= x / 128.0 + 1);
  }
  CHECK(LatencyHistogram::Index(UINT64_MAX) == LatencyHistogram::kBuckets - 1);
}

TEST_CASE("merged histograms equal one histogram of everything", "[core]") {
  Rng rng(3);
  LatencyHistogram all, a, b;
  for (int i = 0; i < 10000; i++) {
    uint64_t x = rng.Range(1000, 5000000);
    all.Add(x);
    (i % 3 ? a : b).Add(x);
  }
  a.Merge(b);
  CHECK(a.count() == all.count());
  CHECK(a.Percentile(99) == all.Percentile(99));
  CHECK(std::abs(a.mean() - all.mean()) < 1e-6 * all.mean());
  CHECK(std::abs(a.stddev() - all.stddev()) < 1e-6 * all.stddev());
}
