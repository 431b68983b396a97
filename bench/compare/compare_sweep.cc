// The worker sweep of `dsbench compare --workers 1,2,4,8` and `dsbench replay --workers ...`
// (bench/compare/compare.h): the fewest workers that meet the required rate. Pure functions.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "bench/compare/compare.h"
#include "src/human.h"

namespace ds::bench {

bool MeetsRate(const CompareRun& r, double required) {
  if (required <= 0) return false;
  if (r.au) return *r.au >= kAuBar;
  return r.samples_per_sec >= required;
}

Result<std::vector<int>> ParseWorkerList(const std::string& text) {
  std::vector<int> v;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item =
        text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char* end = nullptr;
    long n = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || n < 1 || n > 4096) {
      return Status(
          Code::kInvalidArgument,
          fmt::format("`workers` '{}': a count or a list like 1,2,4,8 (each 1..4096)", text));
    }
    v.push_back(static_cast<int>(n));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::optional<int> MinWorkers(const std::vector<const CompareRun*>& points, double required) {
  std::optional<int> best;
  for (const CompareRun* p : points) {
    if (MeetsRate(*p, required) && (!best || p->workers < *best)) best = p->workers;
  }
  return best;
}

WorkerSweep SweepWorkers(const std::vector<std::pair<int, ReplayResult>>& runs) {
  WorkerSweep sw;
  if (runs.empty()) return sw;
  sw.required = runs.front().second.required_samples_per_sec;
  std::vector<const CompareRun*> measured;
  sw.points.reserve(runs.size());
  for (const auto& [workers, result] : runs) {
    if (result.epochs.empty()) continue;  // interrupted before its first epoch
    CompareRun& p = sw.points.emplace_back();
    p.workers = workers;
    p.result = result;
    const EpochResult& e = result.epochs.back();
    p.samples_per_sec = e.samples / (e.seconds > 0 ? e.seconds : 1e-9);
    if (result.compute_time > 0) p.au = e.au;
  }
  for (const auto& p : sw.points) measured.push_back(&p);
  sw.min_workers = MinWorkers(measured, sw.required);
  return sw;
}

std::string WorkerSweepText(const WorkerSweep& sw) {
  std::string t = "\nworker sweep (last epoch):";
  for (const auto& p : sw.points) {
    t += fmt::format(" {}: {} samples/s{};", p.workers, FormatCount(p.samples_per_sec),
                     p.au ? fmt::format(" AU {:.1f}%", *p.au * 100) : "");
  }
  t += "\n";
  t += sw.required <= 0 ? "no required rate (`step_time` or `samples_per_sec`): no pick"
       : sw.min_workers ? fmt::format("fewest workers that feed the job: {}", *sw.min_workers)
                        : "no worker count tried feeds the job";
  return t + "\n";
}

}  // namespace ds::bench
