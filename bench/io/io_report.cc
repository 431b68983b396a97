// The results of `dsbench io`: samples and merges (group_reporting), and fio's report: the JSON
// layout (fio 3.33's stat.c, show_thread_status_json) and the human summary.
// tests/e2e/fio_compat.sh diffs the key paths against a real fio run.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <initializer_list>

#include "bench/common/latency_report.h"
#include "bench/io/io_job.h"
#include "src/human.h"

namespace ds::bench {

void SampleStats::Add(double v) {
  min = n == 0 ? v : std::min(min, v);
  max = n == 0 ? v : std::max(max, v);
  n++;
  double d = v - mean;
  mean += d / static_cast<double>(n);
  m2 += d * (v - mean);
}

void SampleStats::AddParallel(const SampleStats& o) {
  if (o.n == 0) return;
  if (n == 0) {
    *this = o;
    return;
  }
  double var = stddev() * stddev() + o.stddev() * o.stddev();
  min += o.min;
  max += o.max;
  mean += o.mean;
  n += o.n;
  m2 = var * static_cast<double>(n - 1);
}

double SampleStats::stddev() const {
  return n < 2 ? 0 : std::sqrt(std::max(0.0, m2 / static_cast<double>(n - 1)));
}

void DepthStats::Merge(const DepthStats& o) {
  for (size_t i = 0; i < level.size(); i++) {
    level[i] += o.level[i];
    submit[i] += o.submit[i];
    complete[i] += o.complete[i];
  }
}

JobResult MergeJobResults(const std::string& name, std::span<const JobResult> results) {
  JobResult g;
  g.name = name;
  g.jobs = 0;
  double run_ms = 0;
  for (const auto& r : results) {
    g.start_ns = g.jobs == 0 ? r.start_ns : std::min(g.start_ns, r.start_ns);
    g.jobs += r.jobs;
    g.runtime_ms = std::max(g.runtime_ms, r.runtime_ms);  // fio: the slowest job's runtime
    g.elapsed = std::max(g.elapsed, r.elapsed);
    g.end_ns = std::max(g.end_ns, r.end_ns);
    for (auto [dst, src] : {std::pair{&g.read, &r.read}, std::pair{&g.write, &r.write},
                            std::pair{&g.trim, &r.trim}}) {
      dst->io_bytes += src->io_bytes;
      dst->ios += src->ios;
      dst->short_ios += src->short_ios;
      dst->clat.Merge(src->clat);
      dst->bw_kib.AddParallel(src->bw_kib);
      dst->iops.AddParallel(src->iops);
    }
    // fio's group CPU: the jobs' CPU time over their summed runtimes (a mean, not a sum).
    g.usr_cpu += r.usr_cpu * r.runtime_ms;
    g.sys_cpu += r.sys_cpu * r.runtime_ms;
    run_ms += r.runtime_ms;
    g.ctx += r.ctx;
    g.majf += r.majf;
    g.minf += r.minf;
    g.depth.Merge(r.depth);
    g.syncs += r.syncs;
    g.sync_lat.Merge(r.sync_lat);
    g.verified_blocks += r.verified_blocks;
    g.engine_ios += r.engine_ios;
  }
  if (run_ms > 0) {
    g.usr_cpu /= run_ms;
    g.sys_cpu /= run_ms;
  }
  return g;
}

namespace {

double Pct(uint64_t part, uint64_t total) {
  return total ? static_cast<double>(part) * 100.0 / static_cast<double>(total) : 0.0;
}

nlohmann::json Moments(const LatencyHistogram& h) {
  return {{"min", h.min()},
          {"max", h.max()},
          {"mean", h.mean()},
          {"stddev", h.stddev()},
          {"N", h.count()}};
}

nlohmann::json DirJson(const IoJobOptions& o, const DirStats& d, double runtime_ms,
                       double group_kib, bool plus) {
  double secs = runtime_ms / 1e3;
  double bw = secs > 0 ? static_cast<double>(d.io_bytes) / secs : 0;
  nlohmann::json j = {{"io_bytes", d.io_bytes},
                      {"io_kbytes", d.io_bytes / 1024},
                      {"bw_bytes", static_cast<uint64_t>(bw)},
                      {"bw", static_cast<uint64_t>(bw / 1024)},
                      {"iops", secs > 0 ? static_cast<double>(d.ios) / secs : 0.0},
                      {"runtime", d.ios ? static_cast<uint64_t>(runtime_ms) : 0},
                      {"total_ios", d.ios},
                      {"short_ios", d.short_ios},
                      {"drop_ios", 0}};
  // No submission latency is measured apart (clat starts at submission): slat is empty and
  // lat (slat + clat) is clat, as fio reports for a synchronous engine.
  j["slat_ns"] = Moments(LatencyHistogram{});
  j["clat_ns"] = LatencyJson(d.clat, o.percentiles, plus);
  j["lat_ns"] = o.lat_percentiles ? LatencyJson(d.clat, o.percentiles, plus) : Moments(d.clat);
  const SampleStats& b = d.bw_kib;
  j["bw_min"] = static_cast<uint64_t>(b.min);
  j["bw_max"] = static_cast<uint64_t>(b.max);
  j["bw_agg"] = group_kib > 0 ? b.mean * 100 / group_kib : 0.0;
  j["bw_mean"] = b.mean;
  j["bw_dev"] = b.stddev();
  j["bw_samples"] = b.n;
  j["iops_min"] = static_cast<uint64_t>(d.iops.min);
  j["iops_max"] = static_cast<uint64_t>(d.iops.max);
  j["iops_mean"] = d.iops.mean;
  j["iops_stddev"] = d.iops.stddev();
  j["iops_samples"] = d.iops.n;
  return j;
}

// fio's latency_ns/us/ms: the % of IOs whose latency falls in [previous key, key) of the unit.
void LatencyBuckets(const LatencyHistogram& all, nlohmann::json* job) {
  static const uint64_t kKeys[] = {2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000};
  std::array<uint64_t, 10> ns{}, us{};
  std::array<uint64_t, 12> ms{};
  for (const auto& [index, count] : all.Export().buckets) {
    uint64_t v = LatencyHistogram::BucketValue(index);
    auto slot = [](uint64_t x, size_t keys) {
      size_t i = 0;
      while (i < keys && x >= kKeys[i]) i++;
      return i;
    };
    if (v < 1000) {
      ns[std::min<size_t>(slot(v, 10), 9)] += count;
    } else if (v < 1000000) {
      us[std::min<size_t>(slot(v / 1000, 10), 9)] += count;
    } else {
      ms[slot(v / 1000000, 11)] += count;
    }
  }
  const uint64_t total = all.count();
  nlohmann::json jn = nlohmann::json::object(), ju = nlohmann::json::object(),
                 jm = nlohmann::json::object();
  for (size_t i = 0; i < 10; i++) {
    jn[std::to_string(kKeys[i])] = Pct(ns[i], total);
    ju[std::to_string(kKeys[i])] = Pct(us[i], total);
  }
  for (size_t i = 0; i < 11; i++) jm[std::to_string(kKeys[i])] = Pct(ms[i], total);
  jm[">=2000"] = Pct(ms[11], total);
  (*job)["latency_ns"] = jn;
  (*job)["latency_us"] = ju;
  (*job)["latency_ms"] = jm;
}

nlohmann::json DepthMap(const std::array<uint64_t, 7>& counts, bool level) {
  static const char* kLevel[] = {"1", "2", "4", "8", "16", "32", ">=64"};
  static const char* kCount[] = {"0", "4", "8", "16", "32", "64", ">=64"};
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  nlohmann::json j = nlohmann::json::object();
  for (size_t i = 0; i < counts.size(); i++) {
    j[level ? kLevel[i] : kCount[i]] = Pct(counts[i], total);
  }
  return j;
}

// "job options": what was given, as given; dsbench's own form derives them from the fields.
nlohmann::json JobOptionsJson(const IoJobOptions& o) {
  nlohmann::json j = nlohmann::json::object();
  if (o.echo_given) {
    for (const auto& [k, v] : o.given) j[k] = v;
    return j;
  }
  j = {{"rw", RwName(o.rw)},
       {"bs", std::to_string(o.bs)},
       {"iodepth", std::to_string(o.iodepth)},
       {"ioengine", o.ioengine},
       {"registerfiles", o.registerfiles ? "1" : "0"},
       {"fixedbufs", o.fixedbufs ? "1" : "0"},
       {"sqthread_poll", o.sqthread_poll ? "1" : "0"},
       {"iodepth_batch_submit", std::to_string(o.iodepth_batch_submit)},
       {"direct", o.direct ? "1" : "0"},
       {"numjobs", std::to_string(o.numjobs)}};
  return j;
}

std::string DirText(const IoJobOptions& o, const char* what, const DirStats& d, double runtime_ms) {
  if (d.ios == 0) return "";
  double secs = runtime_ms / 1e3;
  double bw = static_cast<double>(d.io_bytes) / secs;
  std::string s = fmt::format("  {}: IOPS={}, BW={}/s ({})({}/{}msec)\n", what,
                              FormatCount(static_cast<double>(d.ios) / secs),
                              FormatBytes(static_cast<uint64_t>(bw)), FormatRate(bw),
                              FormatBytes(d.io_bytes), static_cast<uint64_t>(runtime_ms));
  s += LatencyText("clat", d.clat, o.percentiles);
  if (o.lat_percentiles) s += LatencyText("lat", d.clat, o.percentiles);
  if (d.bw_kib.n > 0) {
    s += fmt::format(
        "   bw (  KiB/s): min={:.0f}, max={:.0f}, avg={:.2f}, stdev={:.2f}, "
        "samples={}\n",
        d.bw_kib.min, d.bw_kib.max, d.bw_kib.mean, d.bw_kib.stddev(), d.bw_kib.n);
  }
  return s;
}

}  // namespace

// Each reporting group's read/write KiB/s (fio's rs->agg), for bw_agg.
static std::map<unsigned, std::array<double, 3>> GroupKib(std::span<const IoJobOptions> specs,
                                                          const IoRun& run) {
  std::map<unsigned, std::array<double, 3>> group_kib;
  for (const auto& r : run.jobs) {
    auto& g = group_kib[specs[r.spec].groupid];
    double secs = r.runtime_ms / 1e3;
    if (secs <= 0) continue;
    g[0] += static_cast<double>(r.read.io_bytes) / 1024 / secs;
    g[1] += static_cast<double>(r.write.io_bytes) / 1024 / secs;
    g[2] += static_cast<double>(r.trim.io_bytes) / 1024 / secs;
  }
  return group_kib;
}

nlohmann::json JobJson(const IoJobOptions& o, const JobResult& r, bool plus,
                       std::array<double, 3> group_kib) {
  nlohmann::json j = {{"jobname", r.name},
                      {"groupid", o.groupid},
                      {"error", 0},
                      {"eta", 0},
                      {"elapsed", static_cast<uint64_t>(r.elapsed + 0.5)},
                      {"job options", JobOptionsJson(o)},
                      {"job_runtime", static_cast<uint64_t>(r.runtime_ms)}};
  if (j["job options"].empty()) j.erase("job options");  // as fio: a section that gave none
  j["read"] = DirJson(o, r.read, r.runtime_ms, group_kib[0], plus);
  j["write"] = DirJson(o, r.write, r.runtime_ms, group_kib[1], plus);
  j["trim"] = DirJson(o, r.trim, r.runtime_ms, group_kib[2], plus);
  j["sync"] = {{"total_ios", r.syncs}, {"lat_ns", LatencyJson(r.sync_lat, o.percentiles, plus)}};
  j["job_runtime"] = static_cast<uint64_t>(r.runtime_ms);
  j["usr_cpu"] = r.usr_cpu;
  j["sys_cpu"] = r.sys_cpu;
  j["ctx"] = r.ctx;
  j["majf"] = r.majf;
  j["minf"] = r.minf;
  j["iodepth_level"] = DepthMap(r.depth.level, true);
  j["iodepth_submit"] = DepthMap(r.depth.submit, false);
  j["iodepth_complete"] = DepthMap(r.depth.complete, false);
  LatencyHistogram all = r.read.clat;
  all.Merge(r.write.clat);
  all.Merge(r.trim.clat);
  LatencyBuckets(all, &j);
  j["latency_depth"] = o.iodepth;
  j["latency_target"] = 0;
  j["latency_percentile"] = 100.0;
  j["latency_window"] = 0;
  return j;
}

nlohmann::json JobsJson(std::span<const IoJobOptions> specs, const IoRun& run, bool plus,
                        const std::vector<std::pair<std::string, std::string>>& global_given) {
  auto group_kib = GroupKib(specs, run);
  nlohmann::json jobs = nlohmann::json::array();
  for (const auto& r : run.jobs) {
    const IoJobOptions& o = specs[r.spec];
    jobs.push_back(JobJson(o, r, plus, group_kib[o.groupid]));
  }
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  char when[64];
  std::tm tm{};
  ::localtime_r(&t, &tm);
  std::strftime(when, sizeof when, "%a %b %e %H:%M:%S %Y", &tm);
  nlohmann::json j = {
      {"fio version", std::string("dsbench-") + DSPACK_VERSION},
      {"timestamp", static_cast<int64_t>(t)},
      {"timestamp_ms",
       std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count()},
      {"time", when}};
  if (!global_given.empty()) {
    nlohmann::json g = nlohmann::json::object();
    for (const auto& [k, v] : global_given) g[k] = v;
    j["global options"] = g;
  }
  j["jobs"] = jobs;
  if (run.disk) j["disk_util"] = nlohmann::json::array({run.disk->ToJson()});
  return j;
}

nlohmann::json JobsJson(const IoJobOptions& o, const IoRun& run) {
  return JobsJson(std::span<const IoJobOptions>(&o, 1), run, false, {});
}

nlohmann::json JobJson(const IoJobOptions& o, const JobResult& r) {
  double secs = r.runtime_ms / 1e3;
  std::array<double, 3> kib{};
  if (secs > 0) {
    kib = {static_cast<double>(r.read.io_bytes) / 1024 / secs,
           static_cast<double>(r.write.io_bytes) / 1024 / secs,
           static_cast<double>(r.trim.io_bytes) / 1024 / secs};
  }
  return JobJson(o, r, false, kib);
}

namespace {

// One direction's 41 fields of fio's terse v3 line (KiB, KiB/s, usec).
void TerseDir(const IoJobOptions& o, const DirStats& d, double runtime_ms, double group_kib,
              std::string* t) {
  double secs = runtime_ms / 1e3;
  auto us = [](double ns) { return ns / 1e3; };
  *t += fmt::format(
      ";{};{};{};{}", d.io_bytes / 1024,
      secs > 0 ? static_cast<uint64_t>(static_cast<double>(d.io_bytes) / 1024 / secs) : 0,
      secs > 0 ? static_cast<uint64_t>(static_cast<double>(d.ios) / secs) : 0,
      d.ios ? static_cast<uint64_t>(runtime_ms) : 0);
  *t += ";0;0;0.000000;0.000000";  // slat: not measured apart
  const LatencyHistogram& h = d.clat;
  *t += fmt::format(";{:.0f};{:.0f};{:.6f};{:.6f}", us(static_cast<double>(h.min())),
                    us(static_cast<double>(h.max())), us(h.mean()), us(h.stddev()));
  std::span<const double> ps = o.percentiles;
  if (ps.empty()) ps = LatencyHistogram::DefaultPercentiles();
  for (size_t i = 0; i < 20; i++) {
    if (i < ps.size() && h.count()) {
      *t += fmt::format(";{:.6f}%={:.0f}", ps[i], us(static_cast<double>(h.Percentile(ps[i]))));
    } else {
      *t += ";0%=0";
    }
  }
  *t += fmt::format(";{:.0f};{:.0f};{:.6f};{:.6f}", us(static_cast<double>(h.min())),
                    us(static_cast<double>(h.max())), us(h.mean()), us(h.stddev()));  // lat
  const SampleStats& b = d.bw_kib;
  *t += fmt::format(";{:.0f};{:.0f};{:.6f}%;{:.6f};{:.6f}", b.min, b.max,
                    group_kib > 0 ? b.mean * 100 / group_kib : 0.0, b.mean, b.stddev());
}

std::string Pcts(const nlohmann::json& map, std::initializer_list<const char*> keys, int digits) {
  std::string t;
  for (const char* k : keys) t += fmt::format(";{:.{}f}%", map.at(k).get<double>(), digits);
  return t;
}

}  // namespace

std::string JobTerse(const IoJobOptions& o, const JobResult& r, std::array<double, 3> group_kib,
                     const std::optional<DiskUtil>& disk) {
  std::string t = fmt::format("3;dsbench-{};{};{};0", DSPACK_VERSION, r.name, o.groupid);
  TerseDir(o, r.read, r.runtime_ms, group_kib[0], &t);
  TerseDir(o, r.write, r.runtime_ms, group_kib[1], &t);
  t += fmt::format(";{:.6f}%;{:.6f}%;{};{};{}", r.usr_cpu, r.sys_cpu, r.ctx, r.majf, r.minf);
  nlohmann::json j = JobJson(o, r, false, group_kib);  // the same maps as the JSON
  t += Pcts(j["iodepth_level"], {"1", "2", "4", "8", "16", "32", ">=64"}, 1);
  t += Pcts(j["latency_us"], {"2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"}, 2);
  t += Pcts(j["latency_ms"],
            {"2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000"}, 2);
  if (disk) {
    t += fmt::format(";{};{};{};{};{};{};{};{};{:.2f}%", disk->name, disk->read_ios,
                     disk->write_ios, disk->read_merges, disk->write_merges, disk->read_ticks,
                     disk->write_ticks, disk->in_queue, disk->util());
  }
  return t;
}

std::string JobsTerse(std::span<const IoJobOptions> specs, const IoRun& run) {
  auto group_kib = GroupKib(specs, run);
  std::string t;
  for (const auto& r : run.jobs) {
    const IoJobOptions& o = specs[r.spec];
    t += JobTerse(o, r, group_kib[o.groupid], run.disk) + "\n";
  }
  return t;
}

std::string JobText(const IoJobOptions& o, const JobResult& r) {
  std::string s = fmt::format(
      "{}: (groupid={}, jobs={}): err= 0: rw={}, bs={}, ioengine={}, iodepth={}, direct={}\n",
      r.name, o.groupid, r.jobs, RwName(o.rw), FormatBytes(o.bs), o.ioengine, o.iodepth,
      o.direct ? 1 : 0);
  s += DirText(o, "read", r.read, r.runtime_ms);
  s += DirText(o, "write", r.write, r.runtime_ms);
  s += DirText(o, "trim", r.trim, r.runtime_ms);
  if (r.syncs > 0) s += LatencyText("fsync", r.sync_lat, o.percentiles);
  if (o.verify != VerifyKind::kNone) {
    s += fmt::format("  verify ({}): {} blocks written were read back and checked: OK\n",
                     VerifyName(o.verify), r.verified_blocks);
  }
  s += fmt::format("  cpu          : usr={:.2f}%, sys={:.2f}%, ctx={}, majf={}, minf={}\n",
                   r.usr_cpu, r.sys_cpu, r.ctx, r.majf, r.minf);
  return s;
}

std::string JobsText(std::span<const IoJobOptions> specs, const IoRun& run) {
  std::string s;
  for (const auto& r : run.jobs) s += JobText(specs[r.spec], r);
  s += DiskUtilText(run.disk) + "\n";
  return s;
}

std::string JobsText(const IoJobOptions& o, const IoRun& run) {
  return JobsText(std::span<const IoJobOptions>(&o, 1), run);
}

}  // namespace ds::bench
