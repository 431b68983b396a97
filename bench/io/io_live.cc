#include "bench/io/io_live.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "src/human.h"

namespace ds::bench {

namespace {

uint64_t Sum(std::span<const LiveJob> jobs, uint64_t LiveJob::*field) {
  uint64_t n = 0;
  for (const auto& j : jobs) n += j.*field;
  return n;
}

std::string Clock(double s) {
  auto t = static_cast<uint64_t>(std::max(0.0, std::ceil(s)));
  if (t >= 3600) return fmt::format("{}h:{:02}m:{:02}s", t / 3600, t / 60 % 60, t % 60);
  return fmt::format("{:02}m:{:02}s", t / 60, t % 60);
}

}  // namespace

std::string EtaLine(std::span<const LiveJob> jobs, double seconds, uint64_t window_bytes,
                    uint64_t window_ios, double window) {
  double done = 0, left = 0;
  const double rate = window > 0 ? static_cast<double>(window_bytes) / window : 0;
  for (const auto& j : jobs) {
    double by_bytes = j.target_bytes ? static_cast<double>(j.bytes) / j.target_bytes : 0;
    double by_time = j.runtime > 0 ? seconds / j.runtime : 0;
    done = std::max(done, std::min(1.0, std::max(by_bytes, by_time)));
    double t_left = j.runtime > 0 ? j.runtime - seconds : 1e18;
    if (j.target_bytes > j.bytes && rate > 0) {
      t_left = std::min(t_left, static_cast<double>(j.target_bytes - j.bytes) /
                                    (rate / static_cast<double>(jobs.size())));
    }
    if (t_left < 1e18) left = std::max(left, t_left);
  }
  return fmt::format(
      "Jobs: {}: [{:.1f}%][{}][{} IOPS][eta {}]", jobs.size(), done * 100, FormatRate(rate),
      FormatCount(window > 0 ? static_cast<double>(window_ios) / window : 0), Clock(left));
}

std::string StatusReport(std::span<const LiveJob> jobs, std::span<const LiveJob> before,
                         std::span<const IoJobOptions> specs, double seconds, double interval) {
  std::string s = fmt::format("status at {:.1f}s:\n", seconds);
  for (size_t i = 0; i < jobs.size(); i++) {
    const LiveJob& j = jobs[i];
    uint64_t b0 = i < before.size() ? before[i].bytes : 0,
             n0 = i < before.size() ? before[i].ios : 0;
    double dt = interval > 0 ? interval : 1;
    s += fmt::format("  {}.{}: {} ({} IOs) so far; {}, {} IOPS over the last {:.1f}s\n",
                     specs[j.spec].name, j.clone, FormatBytes(j.bytes), j.ios,
                     FormatRate(static_cast<double>(j.bytes - b0) / dt),
                     FormatCount(static_cast<double>(j.ios - n0) / dt), interval);
  }
  return s;
}

bool LiveReport::active() const {
  return out_.status_interval > 0 || out_.eta == FioOutput::Eta::kAlways ||
         (out_.eta == FioOutput::Eta::kAuto && tty_);
}

void LiveReport::Update(std::span<const LiveJob> jobs, double seconds, bool finished) {
  if (out_.status_interval > 0 && !finished && seconds - last_status_at_ >= out_.status_interval) {
    std::string text = StatusReport(jobs, last_status_, specs_, seconds, seconds - last_status_at_);
    if (drawn_ && tty_) std::fputs("\r\033[K", stderr);  // the ETA line is redrawn after
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    last_status_.assign(jobs.begin(), jobs.end());
    last_status_at_ = seconds;
  }
  const bool eta =
      out_.eta == FioOutput::Eta::kAlways || (out_.eta == FioOutput::Eta::kAuto && tty_);
  if (!eta) return;
  if (finished) {
    if (drawn_ && tty_) std::fputs("\r\033[K", stderr);
    return;
  }
  // On a terminal the line is redrawn every 0.5 s; elsewhere (always) a line a second.
  const double every = tty_ ? 0.5 : 1.0;
  if (seconds - last_eta_at_ < every) return;
  uint64_t b = Sum(jobs, &LiveJob::bytes), n = Sum(jobs, &LiveJob::ios);
  uint64_t b0 = Sum(last_eta_, &LiveJob::bytes), n0 = Sum(last_eta_, &LiveJob::ios);
  std::string line = EtaLine(jobs, seconds, b - b0, n - n0, seconds - last_eta_at_);
  std::fputs(tty_ ? ("\r\033[K" + line).c_str() : (line + "\n").c_str(), stderr);
  std::fflush(stderr);
  drawn_ = true;
  last_eta_.assign(jobs.begin(), jobs.end());
  last_eta_at_ = seconds;
}

}  // namespace ds::bench
