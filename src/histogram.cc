#include "src/histogram.h"

#include <algorithm>
#include <cmath>

namespace ds {

size_t LatencyHistogram::Index(uint64_t v) {
  if (v < 2 * kPerGroup) return static_cast<size_t>(v);  // groups 0 and 1: exact
  int msb = 63 - __builtin_clzll(v);
  int group = msb - kBits + 1;
  if (group >= kGroups) return kBuckets - 1;
  uint64_t offset = (v >> (msb - kBits)) & (kPerGroup - 1);
  return static_cast<size_t>(group) * kPerGroup + offset;
}

uint64_t LatencyHistogram::BucketValue(size_t idx) {
  if (idx < 2 * kPerGroup) return idx;
  uint64_t group = idx / kPerGroup;
  uint64_t offset = idx % kPerGroup;
  int shift = static_cast<int>(group) - 1;  // bucket width is 2^shift
  uint64_t base = (kPerGroup + offset) << shift;
  return base + ((1ull << shift) >> 1);
}

void LatencyHistogram::Add(uint64_t ns) {
  buckets_[Index(ns)]++;
  count_++;
  min_ = std::min(min_, ns);
  max_ = std::max(max_, ns);
  double d = static_cast<double>(ns) - mean_;
  mean_ += d / static_cast<double>(count_);
  m2_ += d * (static_cast<double>(ns) - mean_);
}

void LatencyHistogram::Merge(const LatencyHistogram& o) {
  if (o.count_ == 0) return;
  for (size_t i = 0; i < kBuckets; i++) buckets_[i] += o.buckets_[i];
  double n1 = static_cast<double>(count_), n2 = static_cast<double>(o.count_);
  double d = o.mean_ - mean_;
  mean_ = (n1 * mean_ + n2 * o.mean_) / (n1 + n2);
  m2_ += o.m2_ + d * d * n1 * n2 / (n1 + n2);
  count_ += o.count_;
  min_ = std::min(min_, o.min_);
  max_ = std::max(max_, o.max_);
}

bool LatencyHistogram::Subtract(const LatencyHistogram& e) {
  if (e.count_ > count_) return false;
  for (size_t i = 0; i < kBuckets; i++) {
    if (e.buckets_[i] > buckets_[i]) return false;
  }
  if (e.count_ == 0) return true;
  for (size_t i = 0; i < kBuckets; i++) buckets_[i] -= e.buckets_[i];
  uint64_t n2 = count_ - e.count_;
  if (n2 == 0) {
    *this = LatencyHistogram();
    return true;
  }
  double n = static_cast<double>(count_), n1 = static_cast<double>(e.count_);
  double m = static_cast<double>(n2);
  double mean2 = (n * mean_ - n1 * e.mean_) / m;
  double d = mean2 - e.mean_;
  m2_ = std::max(0.0, m2_ - e.m2_ - d * d * n1 * m / n);
  mean_ = mean2;
  count_ = n2;
  size_t lo = 0, hi = kBuckets - 1;
  while (buckets_[lo] == 0) lo++;
  while (buckets_[hi] == 0) hi--;
  min_ = BucketValue(lo);
  max_ = BucketValue(hi);
  return true;
}

LatencyHistogram::Parts LatencyHistogram::Export() const {
  Parts p;
  for (size_t i = 0; i < kBuckets; i++) {
    if (buckets_[i] != 0) p.buckets.emplace_back(static_cast<uint32_t>(i), buckets_[i]);
  }
  p.count = count_;
  p.min = min();
  p.max = max_;
  p.mean = mean_;
  p.m2 = m2_;
  return p;
}

bool LatencyHistogram::Import(const Parts& p) {
  uint64_t total = 0;
  int64_t last = -1;
  for (auto [i, n] : p.buckets) {
    if (i >= kBuckets || static_cast<int64_t>(i) <= last || n == 0) return false;
    last = i;
    total += n;
  }
  if (total != p.count || (p.count > 0 && p.min > p.max)) return false;
  buckets_.fill(0);
  for (auto [i, n] : p.buckets) buckets_[i] = n;
  count_ = p.count;
  min_ = p.count ? p.min : UINT64_MAX;
  max_ = p.max;
  mean_ = p.mean;
  m2_ = p.m2;
  return true;
}

double LatencyHistogram::stddev() const {
  return count_ > 1 ? std::sqrt(m2_ / static_cast<double>(count_ - 1)) : 0;
}

uint64_t LatencyHistogram::Percentile(double p) const {
  if (count_ == 0) return 0;
  auto rank = static_cast<uint64_t>(std::ceil(p / 100.0 * static_cast<double>(count_)));
  if (rank == 0) rank = 1;
  uint64_t seen = 0;
  for (size_t i = 0; i < kBuckets; i++) {
    seen += buckets_[i];
    if (seen >= rank) return std::clamp(BucketValue(i), min(), max_);
  }
  return max_;
}

const std::vector<double>& LatencyHistogram::DefaultPercentiles() {
  static const std::vector<double> kList = {1,  5,  10, 20, 30,   40,   50,    60,   70,
                                            80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99};
  return kList;
}

}  // namespace ds
