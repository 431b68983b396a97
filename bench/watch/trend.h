// A memory series and the test of whether it leaks (docs/watch.md#verdicts): a least-squares line
// through the samples, with the 95 % confidence interval of its slope (Student's t), not a
// two-point difference.
//
// A series "leaks" when, after a warm-up (the first 10 % of its time span, where a job loads
// and forks its workers, or until a time the caller knows, such as the first epoch's start):
//   - it has at least `min_samples` points;
//   - the lower bound of the slope's 95 % interval is above 0 (significant);
//   - it grew by at least 1 MiB and 1 % of its first value over the window (not noise in the
//     page-table rounding of a flat process);
//   - both halves of the window grow (a steady climb, not one step: a job that loads a buffer
//     once and then stays flat is not a leak).
//
// Memory is bounded whatever the run's length: past kMaxPoints the series keeps every other
// point (the fit over a long run loses nothing that matters). Thread-safety: a value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ds::bench {

struct LineFit {
  size_t n = 0;
  double slope = 0, intercept = 0;  // y per second, y at t = 0
  double slope_se = 0;              // standard error of the slope
  double r2 = 0;
  double slope_low = 0, slope_high = 0;  // 95 % confidence interval
};

// Least squares of ys over ts; n < 3 gives n and zeros.
LineFit FitLine(const std::vector<double>& ts, const std::vector<double>& ys);

// t quantile at 0.975 for `dof` degrees of freedom (Cornish-Fisher; exact to 0.01 for dof >= 3).
double StudentT975(double dof);

class Series {
 public:
  static constexpr size_t kMaxPoints = 4096;
  void Add(double t, double y);
  size_t size() const { return t_.size(); }
  double first_t() const { return t_.empty() ? 0 : t_.front(); }
  double last_t() const { return t_.empty() ? 0 : t_.back(); }
  double last() const { return y_.empty() ? 0 : y_.back(); }
  double peak() const { return peak_; }

  struct Leak {
    bool leaks = false;
    LineFit fit;        // over the window after the warm-up
    double growth = 0;  // fitted growth over the window (y units)
    double first_half_slope = 0, second_half_slope = 0;
    double window_start = 0;  // t where the window starts
  };
  // from: where the warm-up ends at the latest (0: the 10 % rule alone).
  Leak TestLeak(size_t min_samples, double from = 0) const;

 private:
  std::vector<double> t_, y_;
  double peak_ = 0;
  size_t skip_ = 0;  // decimation: keep one point of every 2^k once full
  size_t seen_ = 0;
};

}  // namespace ds::bench
