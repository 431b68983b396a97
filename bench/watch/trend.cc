#include "bench/watch/trend.h"

#include <algorithm>
#include <cmath>

namespace ds::bench {

double StudentT975(double dof) {
  if (dof < 1) return INFINITY;
  if (dof == 1) return 12.706;
  if (dof == 2) return 4.303;
  const double z = 1.959964, z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z;
  return z + (z3 + z) / (4 * dof) + (5 * z5 + 16 * z3 + 3 * z) / (96 * dof * dof) +
         (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * dof * dof * dof);
}

LineFit FitLine(const std::vector<double>& ts, const std::vector<double>& ys) {
  LineFit f;
  f.n = std::min(ts.size(), ys.size());
  if (f.n < 3) return f;
  double mt = 0, my = 0;
  for (size_t i = 0; i < f.n; i++) {
    mt += ts[i];
    my += ys[i];
  }
  mt /= f.n;
  my /= f.n;
  double stt = 0, sty = 0, syy = 0;
  for (size_t i = 0; i < f.n; i++) {
    stt += (ts[i] - mt) * (ts[i] - mt);
    sty += (ts[i] - mt) * (ys[i] - my);
    syy += (ys[i] - my) * (ys[i] - my);
  }
  if (stt <= 0) return f;
  f.slope = sty / stt;
  f.intercept = my - f.slope * mt;
  double sse = std::max(0.0, syy - f.slope * sty);
  f.r2 = syy > 0 ? 1 - sse / syy : 0;
  f.slope_se = std::sqrt(sse / static_cast<double>(f.n - 2) / stt);
  double t = StudentT975(static_cast<double>(f.n - 2));
  f.slope_low = f.slope - t * f.slope_se;
  f.slope_high = f.slope + t * f.slope_se;
  return f;
}

void Series::Add(double t, double y) {
  peak_ = std::max(peak_, y);
  if (seen_++ % (size_t{1} << skip_) != 0) return;
  t_.push_back(t);
  y_.push_back(y);
  if (t_.size() < kMaxPoints) return;
  size_t k = 0;  // full: keep every other point, and from now on one of every 2^(skip_+1)
  for (size_t i = 0; i < t_.size(); i += 2, k++) {
    t_[k] = t_[i];
    y_[k] = y_[i];
  }
  t_.resize(k);
  y_.resize(k);
  skip_++;
  seen_ = 1;
}

Series::Leak Series::TestLeak(size_t min_samples, double from) const {
  Leak l;
  if (t_.empty()) return l;
  l.window_start = std::max(from, t_.front() + 0.1 * (t_.back() - t_.front()));
  auto first = static_cast<std::ptrdiff_t>(std::lower_bound(t_.begin(), t_.end(), l.window_start) -
                                           t_.begin());
  std::vector<double> ts(t_.begin() + first, t_.end()), ys(y_.begin() + first, y_.end());
  l.fit = FitLine(ts, ys);
  if (ts.size() < std::max<size_t>(min_samples, 4)) return l;
  size_t half = ts.size() / 2;
  l.first_half_slope =
      FitLine({ts.begin(), ts.begin() + half + 1}, {ys.begin(), ys.begin() + half + 1}).slope;
  l.second_half_slope = FitLine({ts.begin() + half, ts.end()}, {ys.begin() + half, ys.end()}).slope;
  l.growth = l.fit.slope * (ts.back() - ts.front());
  double floor = std::max(1048576.0, 0.01 * std::max(ys.front(), 0.0));
  l.leaks =
      l.fit.slope_low > 0 && l.growth >= floor && l.first_half_slope > 0 && l.second_half_slope > 0;
  return l;
}

}  // namespace ds::bench
