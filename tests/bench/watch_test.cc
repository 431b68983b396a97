// bench/watch: the line fit and its leak test, epoch-marker lines, and the verdicts from
// hand-made results (tests/e2e/watch.sh watches real processes).
#include "bench/watch/watch.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "bench/watch/downgrade.h"
#include "bench/watch/trend.h"

using ds::bench::EpochStats;
using ds::bench::FitLine;
using ds::bench::Series;
using ds::bench::WatchOptions;
using ds::bench::WatchResult;

namespace {
bool HasVerdict(const WatchResult& r, const std::string& kind) {
  for (const auto& v : r.verdicts) {
    if (v.kind == kind) return true;
  }
  return false;
}
}  // namespace

TEST_CASE("line fit: slope, its 95 % interval, R²", "[bench]") {
  std::vector<double> t, y;
  for (int i = 0; i < 20; i++) {
    t.push_back(i);
    y.push_back(100 + 5.0 * i + ((i % 2) ? 1.0 : -1.0));  // slope 5, noise +-1
  }
  auto f = FitLine(t, y);
  CHECK(f.n == 20);
  CHECK(f.slope == Approx(5.0).margin(0.05));
  CHECK(f.slope_low < f.slope);
  CHECK(f.slope_high > f.slope);
  CHECK(f.slope_low > 4.8);
  CHECK(f.r2 > 0.99);
  CHECK(ds::bench::StudentT975(10) == Approx(2.228).margin(0.005));
  CHECK(ds::bench::StudentT975(30) == Approx(2.042).margin(0.003));
  CHECK(FitLine({1, 2}, {1, 2}).slope == 0);  // too few points
}

TEST_CASE("leak test: a steady climb leaks; flat, a step and noise do not", "[bench]") {
  auto series = [](auto f, int n = 40) {
    Series s;
    for (int i = 0; i < n; i++) s.Add(i * 0.5, f(i));
    return s;
  };
  const double mib = 1 << 20;
  Series climb = series([&](int i) { return 100 * mib + 2 * mib * i; });
  auto l = climb.TestLeak(10);
  CHECK(l.leaks);
  CHECK(l.fit.slope == Approx(4 * mib));  // 2 MiB a 0.5 s sample
  CHECK_FALSE(series([&](int) { return 100 * mib; }).TestLeak(10).leaks);
  // One allocation in the middle: both halves are flat, so no leak.
  CHECK_FALSE(series([&](int i) { return (i < 20 ? 100 : 200) * mib; }).TestLeak(10).leaks);
  // Page-rounding noise of a flat process: under the 1 MiB / 1 % floor.
  CHECK_FALSE(series([&](int i) { return 100 * mib + 4096.0 * (i % 3); }).TestLeak(10).leaks);
  // Too few samples.
  CHECK_FALSE(series([&](int i) { return 100 * mib + 2 * mib * i; }, 8).TestLeak(10).leaks);
  // A ramp during the warm-up, flat after it: no leak once the warm-up is known.
  Series warm = series([&](int i) { return (i < 20 ? 10 * i : 200) * mib; });
  CHECK_FALSE(warm.TestLeak(10, 10.0).leaks);
}

TEST_CASE("series: bounded memory over a long run", "[bench]") {
  Series s;
  for (int i = 0; i < 100000; i++) s.Add(i, 1000.0 + i);
  CHECK(s.size() <= Series::kMaxPoints);
  CHECK(s.size() >= Series::kMaxPoints / 4);
  CHECK(s.peak() == 1000.0 + 99999);
  CHECK(s.TestLeak(10).fit.slope == Approx(1.0));
}

TEST_CASE("epoch-marker lines: summed over processes, bad lines ignored", "[bench]") {
  std::vector<EpochStats> e;
  double t0 = 1000;
  ds::bench::AddEpochLine(R"({"event":"start","epoch":0,"pid":1,"t":1001})", t0, &e);
  ds::bench::AddEpochLine(R"({"event":"start","epoch":0,"pid":2,"t":1000.5})", t0, &e);
  ds::bench::AddEpochLine(
      R"({"event":"end","epoch":0,"pid":1,"t":1011,"samples":100,"bytes":1000,"data_wait_s":2})",
      t0, &e);
  ds::bench::AddEpochLine(
      R"({"event":"end","epoch":0,"pid":2,"t":1010.5,"samples":50,"data_wait_s":3})", t0, &e);
  ds::bench::AddEpochLine("not json", t0, &e);
  ds::bench::AddEpochLine(R"({"event":"end"})", t0, &e);
  // A job's malformed lines are ignored, never thrown on: wrong types, out of range, NaN-free.
  ds::bench::AddEpochLine(R"({"event":5,"epoch":0,"t":1001})", t0, &e);
  ds::bench::AddEpochLine(R"({"event":"end","epoch":-1,"t":1001})", t0, &e);
  ds::bench::AddEpochLine(R"({"event":"end","epoch":1e300,"t":1001})", t0, &e);
  ds::bench::AddEpochLine(R"({"event":"end","epoch":"0","t":1001})", t0, &e);
  ds::bench::AddEpochLine(R"({"event":"end","epoch":0,"t":1011,"samples":-5,"bytes":"x"})", t0, &e);
  REQUIRE(e.size() == 1);
  CHECK(e[0].start == 0.5);
  CHECK(e[0].end == 11);
  CHECK(e[0].duration() == 10.5);
  CHECK(e[0].markers == 3);  // the last line's end counts; its bad samples and bytes do not
  CHECK(e[0].samples == 150);
  CHECK(e[0].bytes == 1000);
  CHECK(e[0].wait_share() == Approx(5.0 / (3 * 10.5)));
  e[0].read_bytes = 250;
  CHECK(e[0].cold_share() == Approx(0.25));
}

TEST_CASE("verdicts: memory, cold first epoch, data wait, NFS", "[bench]") {
  WatchOptions o;
  WatchResult r;
  r.baseline.mem_total = 100ull << 30;
  r.min_available = r.last.mem_available = 10ull << 30;  // 10 %: below the 20 % line
  r.last.pswpout = 5;
  for (int i = 0; i < 30; i++) r.job_memory.Add(i, (1ull << 30) + i * (8ull << 20));
  r.mounts = {"/mnt/data (nfs)"};
  EpochStats e0, e1;
  e0.epoch = 0, e0.start = 0, e0.end = 30, e0.markers = 1, e0.has_wait = true, e0.data_wait_s = 15;
  e0.residency_at_start = 0;
  e1.epoch = 1, e1.start = 30, e1.end = 40, e1.markers = 1, e1.has_wait = true,
  e1.data_wait_s = 0.1;
  e1.residency_at_start = 0.98;
  r.epochs = {e0, e1};
  r.nfs_first = ds::ParseMountstats(
      "device srv:/x mounted on /mnt/data with fstype nfs statvers=1.1\n"
      "\tper-op statistics\n\t        READ: 10 10 0 1 1 0 10 12 0\n");
  r.nfs_last = ds::ParseMountstats(
      "device srv:/x mounted on /mnt/data with fstype nfs statvers=1.1\n"
      "\tper-op statistics\n\t        READ: 110 113 0 1 1 0 210 260 0\n");
  ds::bench::Judge(o, &r);
  CHECK(HasVerdict(r, "memory.leak"));
  CHECK(HasVerdict(r, "memory.swap"));
  CHECK(HasVerdict(r, "memory.low"));
  CHECK(HasVerdict(r, "io.cold_first_epoch"));
  CHECK(HasVerdict(r, "io.data_wait"));  // epoch 0 only: 50 %
  CHECK(HasVerdict(r, "network.nfs"));
  for (const auto& v : r.verdicts) {
    if (v.kind == "io.data_wait") CHECK(v.evidence["epoch"] == 0);
    if (v.kind == "io.cold_first_epoch") CHECK(v.text.find("/mnt/data (nfs)") != std::string::npos);
    if (v.kind == "network.nfs") {
      CHECK(v.evidence["retransmits"] == 3);
      CHECK(v.evidence["ops"]["READ"]["ops"] == 100);
      CHECK(v.evidence["ops"]["READ"]["mean_rtt_ms"] == Approx(2.0));
    }
    if (v.kind == "memory.leak") {
      CHECK(v.evidence["slope_bytes_per_hour"].get<double>() == Approx(8.0 * (1 << 20) * 3600));
    }
  }
  std::string text = ds::bench::WatchText(r);
  CHECK(text.find("verdict memory.leak") != std::string::npos);
  CHECK(text.find("epoch  seconds") != std::string::npos);

  WatchResult quiet;
  quiet.baseline.mem_total = 100ull << 30;
  quiet.min_available = quiet.last.mem_available = 90ull << 30;
  ds::bench::Judge(o, &quiet);
  CHECK(quiet.verdicts.empty());
  CHECK(ds::bench::WatchText(quiet).find("verdict: none") != std::string::npos);
}

TEST_CASE("downgrade: a sample's time split into storage, decode, IPC", "[bench]") {
  ds::bench::DowngradeOptions o;
  o.workers = 4;
  ds::bench::DowngradeResult r;
  auto run = [](double per_s) {
    ds::bench::DowngradeRun d;
    d.samples = 100;
    d.samples_per_s = per_s;
    return d;
  };
  r.runs = {{"configured", run(1000)},  // 1000 us a sample
            {"memory", run(4000)},      // 250 us without storage
            {"memory_w0", run(5000)},   // 200 us of decode in one process: 50 us on 4 workers
            {"workers0", run(500)},
            {"staged", run(2500)}};  // 400 us from a local copy
  ds::bench::Attribute(o, &r);
  REQUIRE(r.parts.size() == 4);
  CHECK(r.largest == "storage");
  CHECK(r.parts[0].name == "storage");
  CHECK(r.parts[0].seconds_per_sample == Approx(750e-6));
  CHECK(r.parts[0].share == Approx(0.75));
  CHECK(r.parts[1].name == "worker_ipc");
  CHECK(r.parts[1].seconds_per_sample == Approx(200e-6));
  CHECK(r.parts[2].name == "decode_transform");
  CHECK(r.parts[2].seconds_per_sample == Approx(50e-6));
  CHECK(r.parts[3].name == "remote_access");
  CHECK(r.parts[3].share == Approx(0.6));
  CHECK(r.advice.front().rfind("stage it", 0) == 0);

  // From memory slower than from storage: no storage share, nothing past 100 %.
  ds::bench::DowngradeResult m;
  m.runs = {{"configured", run(1000)}, {"memory", run(800)}, {"memory_w0", run(100000)}};
  ds::bench::Attribute(o, &m);
  double total = 0;
  for (const auto& p : m.parts) total += p.share;
  CHECK(total == Approx(1.0));
  CHECK(m.largest == "worker_ipc");
  CHECK(ds::bench::DowngradeText(o, m).find("largest share is worker_ipc") != std::string::npos);
}
