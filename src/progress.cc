#include "src/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

#include "src/human.h"

namespace ds {

Progress::Progress(bool want, std::string unit, uint64_t total_items)
    : enabled_(want && ::isatty(STDERR_FILENO)),
      unit_(std::move(unit)),
      total_(total_items),
      start_(std::chrono::steady_clock::now()) {}

void Progress::Update(uint64_t items, uint64_t bytes) {
  if (!enabled_) return;
  Draw(items, bytes, false);
}

void Progress::Draw(uint64_t items, uint64_t bytes, bool force) {
  auto now = std::chrono::steady_clock::now();
  int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now - start_).count();
  int64_t last = last_draw_ns_.load(std::memory_order_relaxed);
  if (!force && ns - last < 100'000'000) return;
  if (!last_draw_ns_.compare_exchange_strong(last, ns) && !force) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  double secs = static_cast<double>(ns) / 1e9;
  double rate = secs > 0 ? static_cast<double>(items) / secs : 0;
  std::string line;
  if (total_ > 0) {
    double frac = std::min(1.0, static_cast<double>(items) / static_cast<double>(total_));
    int width = 24;
    int fill = static_cast<int>(frac * width);
    line = "[" + std::string(fill, '=') + (fill < width ? ">" : "") +
           std::string(width - fill - (fill < width ? 1 : 0), ' ') + "]";
    line += fmt::format(" {:3.0f}% {}/{} {}", frac * 100, FormatCount(static_cast<double>(items)),
                        FormatCount(static_cast<double>(total_)), unit_);
  } else {
    line = fmt::format("{} {}", FormatCount(static_cast<double>(items)), unit_);
  }
  line += fmt::format("  {} {}/s  {}", FormatCount(rate), unit_,
                      FormatRate(secs > 0 ? static_cast<double>(bytes) / secs : 0));
  if (total_ > 0 && rate > 0 && items < total_) {
    line += "  ETA " + FormatDuration(static_cast<double>(total_ - items) / rate);
  }
  std::fprintf(stderr, "\r%s\x1b[K", line.c_str());
  std::fflush(stderr);
}

void Progress::Finish() {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  finished_ = true;
  std::fprintf(stderr, "\r\x1b[K");
  std::fflush(stderr);
}

}  // namespace ds
