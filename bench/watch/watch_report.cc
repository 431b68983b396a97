// The verdicts of `dsbench watch`, in the write-up's order (memory, IO, data wait, network), and
// its JSON and text reports (docs/watch.md#verdicts).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "bench/watch/watch.h"
#include "src/human.h"

namespace ds::bench {

namespace {

constexpr double kLowAvailable = 0.20;   // the write-up: available below 20 % of total
constexpr double kSlowFirstEpoch = 1.3;  // epoch 0 at least 1.3x the later epochs' median
constexpr double kDataWaitShare = 0.10;  // waiting for data 10 % of an epoch or more
constexpr double kIoPressure = 0.10;     // PSI io "some": stalled 10 % of the run or more

std::string PerHour(double bytes_per_sec) {
  return FormatBytes(static_cast<uint64_t>(std::max(0.0, bytes_per_sec) * 3600)) + "/hour";
}

nlohmann::json FitJson(const Series::Leak& l) {
  return {{"slope_bytes_per_hour", l.fit.slope * 3600},
          {"ci95_bytes_per_hour", {l.fit.slope_low * 3600, l.fit.slope_high * 3600}},
          {"r2", l.fit.r2},
          {"samples", l.fit.n},
          {"growth_bytes", l.growth},
          {"first_half_slope_bytes_per_hour", l.first_half_slope * 3600},
          {"second_half_slope_bytes_per_hour", l.second_half_slope * 3600},
          {"window_start_s", l.window_start}};
}

std::string LeakText(const Series::Leak& l) {
  return fmt::format("{} (95 % CI {} to {}, R² {:.2f}, {} samples)", PerHour(l.fit.slope),
                     PerHour(l.fit.slope_low), PerHour(l.fit.slope_high), l.fit.r2, l.fit.n);
}

std::string Mounts(const WatchResult& r) {
  if (r.mounts.empty()) return "no open data files seen";
  std::string s;
  for (const std::string& m : r.mounts) s += (s.empty() ? "" : ", ") + m;
  return "files on " + s;
}

void JudgeMemory(const WatchOptions& o, WatchResult* r) {
  // The warm-up lasts at least until the first epoch starts (imports, the model, the workers).
  double from = 0;
  bool any = false;
  for (const EpochStats& e : r->epochs) {
    if (e.start >= 0 && (!any || e.start < from)) from = e.start, any = true;
  }
  Series::Leak job = r->job_memory.TestLeak(o.leak_min_samples, from);
  if (job.leaks) {
    double avail = static_cast<double>(r->last.mem_available);
    std::string left =
        job.fit.slope > 0 ? FormatDuration(avail / job.fit.slope) : std::string("never");
    r->verdicts.push_back(
        {"memory.leak",
         fmt::format(
             "memory: the job's memory (RSS summed) grows {}; the {} available runs out in {} "
             "at this rate",
             LeakText(job), FormatBytes(r->last.mem_available), left),
         FitJson(job)});
    r->verdicts.back().evidence["time_to_exhaustion_s"] = avail / job.fit.slope;
  }
  std::vector<std::pair<double, pid_t>> leaking;
  for (auto& [pid, ps] : r->processes) {
    Series::Leak l = ps.rss.TestLeak(o.leak_min_samples, from);
    if (l.leaks) leaking.emplace_back(l.fit.slope, pid);
  }
  std::sort(leaking.rbegin(), leaking.rend());
  for (size_t i = 0; i < leaking.size() && i < 5; i++) {
    const ProcSeries& ps = r->processes[leaking[i].second];
    Series::Leak l = ps.rss.TestLeak(o.leak_min_samples, from);
    Verdict v{"memory.leak",
              fmt::format("memory: process {} ({}) RSS grows {}", leaking[i].second, ps.comm,
                          LeakText(l)),
              FitJson(l)};
    v.evidence["pid"] = leaking[i].second;
    r->verdicts.push_back(std::move(v));
  }
  uint64_t in = r->last.pswpin - std::min(r->last.pswpin, r->baseline.pswpin);
  uint64_t out = r->last.pswpout - std::min(r->last.pswpout, r->baseline.pswpout);
  if (in + out > 0) {
    r->verdicts.push_back({"memory.swap",
                           fmt::format("memory: the system swapped during the job: {} pages in, "
                                       "{} out",
                                       in, out),
                           {{"pswpin", in}, {"pswpout", out}}});
  }
  if (r->baseline.mem_total &&
      r->min_available < kLowAvailable * static_cast<double>(r->baseline.mem_total)) {
    r->verdicts.push_back(
        {"memory.low",
         fmt::format("memory: available fell to {} of {} ({:.0f} %, below the 20 % line)",
                     FormatBytes(r->min_available), FormatBytes(r->baseline.mem_total),
                     100.0 * r->min_available / r->baseline.mem_total),
         {{"min_available", r->min_available}, {"mem_total", r->baseline.mem_total}}});
  }
}

void JudgeIo(WatchResult* r) {
  for (const auto& [name, a] : r->devices) {
    if (a.intervals == 0 || a.saturated * 4 < a.intervals) continue;
    r->verdicts.push_back(
        {"io.device",
         fmt::format("IO: {} was saturated (util >= 90 %, r_await >= 20 ms) in {} of {} "
                     "intervals; util up to {:.0f} %, r_await up to {:.1f} ms; {}",
                     name, a.saturated, a.intervals, a.peak_util, a.peak_r_await_ms, Mounts(*r)),
         {{"device", name},
          {"saturated_intervals", a.saturated},
          {"intervals", a.intervals},
          {"peak_util", a.peak_util},
          {"peak_r_await_ms", a.peak_r_await_ms}}});
  }
  if (r->baseline.io.present && r->last.io.present && r->seconds > 0) {
    double stalled =
        static_cast<double>(r->last.io.some_total_us -
                            std::min(r->last.io.some_total_us, r->baseline.io.some_total_us)) /
        (r->seconds * 1e6);
    if (stalled >= kIoPressure) {
      r->verdicts.push_back(
          {"io.pressure",
           fmt::format("IO: some task was stalled on IO {:.0f} % of the job's time (PSI io "
                       "some); {}",
                       100 * stalled, Mounts(*r)),
           {{"io_some_share", stalled}}});
    }
  }
  std::vector<const EpochStats*> done;
  for (const EpochStats& e : r->epochs) {
    if (e.duration() > 0) done.push_back(&e);
  }
  if (done.size() >= 2) {
    std::vector<double> later;
    for (size_t i = 1; i < done.size(); i++) later.push_back(done[i]->duration());
    std::sort(later.begin(), later.end());
    double median = later[later.size() / 2];
    const EpochStats& first = *done[0];
    if (median > 0 && first.duration() >= kSlowFirstEpoch * median) {
      nlohmann::json ev = {{"first_epoch_s", first.duration()}, {"later_median_s", median}};
      std::string cache;
      if (first.residency_at_start >= 0 && done[1]->residency_at_start >= 0) {
        cache = fmt::format(" (page cache {:.0f} % at its start, {:.0f} % at epoch {}'s)",
                            100 * first.residency_at_start, 100 * done[1]->residency_at_start,
                            done[1]->epoch);
        ev["residency_at_start"] = {first.residency_at_start, done[1]->residency_at_start};
      }
      r->verdicts.push_back(
          {"io.cold_first_epoch",
           fmt::format("IO: epoch {} took {}, the later epochs {} (median): the first read the "
                       "data cold{}; that is the page cache warming, not a bug; {}",
                       first.epoch, FormatDuration(first.duration()), FormatDuration(median), cache,
                       Mounts(*r)),
           ev});
    }
  }
  for (const EpochStats* e : done) {
    double w = e->wait_share();
    if (w < kDataWaitShare) continue;
    r->verdicts.push_back(
        {"io.data_wait",
         fmt::format("data wait: the job waited for data {:.0f} % of epoch {} ({} of {}); {}",
                     100 * w, e->epoch, FormatDuration(e->data_wait_s / std::max(1, e->markers)),
                     FormatDuration(e->duration()), Mounts(*r)),
         {{"epoch", e->epoch}, {"wait_share", w}}});
  }
}

void JudgeNetwork(WatchResult* r) {
  for (const auto& [mount, last] : r->nfs_last) {
    auto first = r->nfs_first.find(mount);
    RpcBill d = first == r->nfs_first.end() ? last : RpcBillDelta(last, first->second);
    uint64_t retrans = 0;
    double rtt = 0;
    nlohmann::json ops = nlohmann::json::object();
    for (const auto& [name, op] : d.ops) {
      retrans += op.retransmits;
      rtt += op.rtt_ms_sum;
      ops[name] = {{"ops", op.count},
                   {"retransmits", op.retransmits},
                   {"major_timeouts", op.failed},
                   {"mean_rtt_ms", op.count ? op.rtt_ms_sum / op.count : 0},
                   {"mean_exec_ms", op.mean_ms()}};
    }
    if (d.total() == 0) continue;
    r->verdicts.push_back(
        {"network.nfs",
         fmt::format("network: NFS ({}) on {}: {} RPCs, mean RTT {:.2f} ms, {} retransmits; {}",
                     d.protocol, mount, d.total(), rtt / d.total(), retrans, FormatRpcBill(d, 0)),
         {{"mount", mount}, {"protocol", d.protocol}, {"retransmits", retrans}, {"ops", ops}}});
  }
}

nlohmann::json EpochJson(const EpochStats& e) {
  nlohmann::json j = {{"epoch", e.epoch},
                      {"start_s", e.start},
                      {"seconds", e.duration()},
                      {"markers", e.markers},
                      {"read_bytes", e.read_bytes},
                      {"rss_end", e.rss_end},
                      {"available_end", e.available_end}};
  if (e.has_samples) {
    j["samples"] = e.samples;
    if (e.duration() > 0) j["samples_per_s"] = e.samples / e.duration();
  }
  if (e.has_bytes) j["bytes"] = e.bytes;
  if (e.has_wait) {
    j["data_wait_s"] = e.data_wait_s;
    j["data_wait_share"] = e.wait_share();
  }
  if (e.cold_share() >= 0) j["cold_read_share"] = e.cold_share();
  if (e.residency_at_start >= 0) j["page_cache_at_start"] = e.residency_at_start;
  return j;
}

}  // namespace

double EpochStats::wait_share() const {
  if (!has_wait || duration() <= 0 || markers == 0) return -1;
  return std::min(1.0, data_wait_s / (markers * duration()));
}

double EpochStats::cold_share() const {
  if (!has_bytes || bytes == 0) return -1;
  return std::min(1.0, static_cast<double>(read_bytes) / bytes);
}

namespace {

// A finite number in [lo, hi] at `key`, else nullopt (a marker line is the job's, not ours).
std::optional<double> Number(const nlohmann::json& j, const char* key, double lo, double hi) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  double v = it->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi) return std::nullopt;
  return v;
}

}  // namespace

void AddEpochLine(const std::string& line, double t0, std::vector<EpochStats>* epochs) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return;
  auto epoch = Number(j, "epoch", 0, 1e9);
  auto t = Number(j, "t", 0, 1e12);
  auto ev = j.find("event");
  if (!epoch || !t || ev == j.end() || !ev->is_string()) return;
  const std::string event = ev->get<std::string>();
  if (event != "start" && event != "end") return;
  int n = static_cast<int>(*epoch);
  double at = *t - t0;
  auto it = std::find_if(epochs->begin(), epochs->end(),
                         [&](const EpochStats& e) { return e.epoch == n; });
  if (it == epochs->end()) {
    epochs->push_back({});
    it = epochs->end() - 1;
    it->epoch = n;
  }
  if (event == "start") {
    if (it->start < 0 || at < it->start) it->start = at;
    return;
  }
  it->end = std::max(it->end, at);
  it->markers++;
  if (auto v = Number(j, "samples", 0, 1e18)) {
    it->samples += static_cast<uint64_t>(*v);
    it->has_samples = true;
  }
  if (auto v = Number(j, "bytes", 0, 1e18)) {
    it->bytes += static_cast<uint64_t>(*v);
    it->has_bytes = true;
  }
  if (auto v = Number(j, "data_wait_s", 0, 1e9)) {
    it->data_wait_s += *v;
    it->has_wait = true;
  }
}

void Judge(const WatchOptions& o, WatchResult* r) {
  r->verdicts.clear();
  JudgeMemory(o, r);
  JudgeIo(r);
  JudgeNetwork(r);
}

nlohmann::json WatchJson(const WatchResult& r) {
  nlohmann::json procs = nlohmann::json::array();
  for (const auto& [pid, ps] : r.processes) {
    procs.push_back({{"pid", pid},
                     {"comm", ps.comm},
                     {"first_seen_s", ps.first_seen},
                     {"last_seen_s", ps.last_seen},
                     {"rss_last", ps.rss.last()},
                     {"rss_peak", ps.rss.peak()},
                     {"vm_peak", ps.vm_peak},
                     {"majflt", ps.majflt},
                     {"read_bytes", ps.read_bytes},
                     {"cpu_seconds", ps.cpu_seconds},
                     {"exited", ps.exited}});
  }
  nlohmann::json epochs = nlohmann::json::array();
  for (const EpochStats& e : r.epochs) epochs.push_back(EpochJson(e));
  nlohmann::json verdicts = nlohmann::json::array();
  for (const Verdict& v : r.verdicts) {
    verdicts.push_back({{"kind", v.kind}, {"text", v.text}, {"evidence", v.evidence}});
  }
  nlohmann::json devices = nlohmann::json::object();
  for (const auto& [name, a] : r.devices) {
    devices[name] = DiskDelta(a.first, a.last, (a.last_t - a.first_t) * 1e3).ToJson();
    devices[name]["saturated_intervals"] = a.saturated;
    devices[name]["intervals"] = a.intervals;
  }
  nlohmann::json j = {{"seconds", r.seconds},
                      {"samples", r.samples},
                      {"stopped", r.stopped},
                      {"max_processes", r.max_processes},
                      {"job_memory_last", r.job_memory.last()},
                      {"job_memory_peak", r.job_memory.peak()},
                      {"job_pss_last", r.job_pss_last},
                      {"job_pss_t", r.job_pss_t},
                      {"job_cpu_seconds", r.cpu_seconds},
                      {"watch_cpu_seconds", r.watch_cpu_seconds},
                      {"min_available", r.min_available},
                      {"mounts", r.mounts},
                      {"devices", devices},
                      {"processes", procs},
                      {"epochs", epochs},
                      {"verdicts", verdicts},
                      {"notes", r.notes}};
  if (r.exit_status) j["exit_status"] = *r.exit_status;
  return j;
}

std::string WatchText(const WatchResult& r) {
  std::string s = fmt::format("dsbench watch: {} watched, {} samples, {} processes at most{}{}\n",
                              FormatDuration(r.seconds), r.samples, r.max_processes,
                              r.exit_status ? fmt::format(", exit {}", *r.exit_status) : "",
                              r.stopped ? ", stopped (SIGINT/SIGTERM)" : "");
  s += fmt::format(
      "  memory: job RSS {} at the end (PSS {} at {}), {} at its peak; available {} at the "
      "lowest, of {}\n",
      FormatBytes(static_cast<uint64_t>(r.job_memory.last())), FormatBytes(r.job_pss_last),
      FormatDuration(r.job_pss_t), FormatBytes(static_cast<uint64_t>(r.job_memory.peak())),
      FormatBytes(r.min_available), FormatBytes(r.baseline.mem_total));
  s += fmt::format("  cpu: the job {:.1f} s, watch itself {:.2f} s\n", r.cpu_seconds,
                   r.watch_cpu_seconds);
  s += "  data: " + Mounts(r) + "\n";
  if (!r.epochs.empty()) {
    s += "  epoch  seconds  data wait  samples/s      read  cold  cached at start     memory  "
         "available\n";
    for (const EpochStats& e : r.epochs) {
      auto pct = [](double v) {
        return v < 0 ? std::string("-") : fmt::format("{:.0f}%", 100 * v);
      };
      s += fmt::format(
          "  {:>5}  {:>7.2f}  {:>9}  {:>9}  {:>8}  {:>4}  {:>15}  {:>9}  {:>9}\n", e.epoch,
          e.duration(), pct(e.wait_share()),
          e.has_samples && e.duration() > 0 ? fmt::format("{:.0f}", e.samples / e.duration()) : "-",
          e.has_bytes    ? FormatBytes(e.bytes)
          : e.read_bytes ? FormatBytes(e.read_bytes)
                         : std::string("-"),
          pct(e.cold_share()), pct(e.residency_at_start), FormatBytes(e.rss_end),
          FormatBytes(e.available_end));
    }
  }
  if (r.verdicts.empty()) {
    s += "  verdict: none: no leak, no swap, memory to spare, no saturated device, no data wait "
         "marked\n";
  }
  for (const Verdict& v : r.verdicts) s += "  verdict " + v.kind + ": " + v.text + "\n";
  for (const std::string& n : r.notes) s += "  note: " + n + "\n";
  return s;
}

}  // namespace ds::bench
