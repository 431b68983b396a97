// LatencyHistogram: fio's log-linear latency histogram (fio stat.h, FIO_IO_U_PLAT_BITS = 6).
//
// Values (nanoseconds) below 128 have a bucket each; above, every power of two is split into 64
// equal buckets, so a bucket is at most 1/64 of its lower bound wide and a percentile read from
// the bucket's middle is within 1/128 (0.78 %) of the exact value. 44 groups cover up to 2^49 ns
// (6.5 days) in 2,816 buckets (22 KiB). Percentiles follow fio's calc_clat_percentiles: the first
// bucket whose cumulative count reaches p% of the total. Mean and stddev are exact (Welford).
// Not thread-safe: give each worker its own and Merge() them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace ds {

class LatencyHistogram {
 public:
  static constexpr int kBits = 6;
  static constexpr uint64_t kPerGroup = 1u << kBits;  // 64
  static constexpr int kGroups = 44;
  static constexpr size_t kBuckets = kGroups * kPerGroup;

  void Add(uint64_t ns);
  void Merge(const LatencyHistogram& other);
  // What was added since `earlier`, a past copy of this histogram: Merge's inverse. Bucket
  // counts, count, mean and stddev are exact; min and max become the values of the lowest and
  // highest remaining buckets (within 0.78 %). False (and *this unchanged) when earlier is not a
  // past copy (a bucket holds more there than here).
  bool Subtract(const LatencyHistogram& earlier);

  uint64_t count() const { return count_; }
  uint64_t min() const { return count_ ? min_ : 0; }
  uint64_t max() const { return max_; }
  double mean() const { return mean_; }
  double stddev() const;
  // p in (0, 100]. 0 when empty.
  uint64_t Percentile(double p) const;

  // fio's default percentile list.
  static const std::vector<double>& DefaultPercentiles();

  // The whole state, for sending a histogram to another process (an MPI rank's results to rank
  // 0): the non-empty buckets as (index, count) and the exact moments. Import(Export()) is the
  // same histogram, so merging imported histograms is as exact as merging local ones.
  struct Parts {
    std::vector<std::pair<uint32_t, uint64_t>> buckets;  // ascending index, counts > 0
    uint64_t count = 0, min = 0, max = 0;
    double mean = 0, m2 = 0;
  };
  Parts Export() const;
  // False (and *this unchanged) when the parts are inconsistent: an index out of range, not
  // ascending, or bucket counts that do not add up to `count`.
  bool Import(const Parts& p);

  // Bucket index of a value, and the value reported for a bucket (its middle).
  static size_t Index(uint64_t ns);
  static uint64_t BucketValue(size_t index);

 private:
  std::array<uint64_t, kBuckets> buckets_{};
  uint64_t count_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
  double mean_ = 0;
  double m2_ = 0;
};

}  // namespace ds
