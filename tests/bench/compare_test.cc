// bench/compare/compare.h: the summaries, ranking, ratios, recommendation and worker sweep of
// `dsbench compare`, on hand-made replay results (no IO: the e2e test runs the real thing).
#include "bench/compare/compare.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using ds::bench::CompareOptions;
using ds::bench::CompareResult;
using ds::bench::CompareRun;
using ds::bench::EpochResult;

namespace {

// An epoch of `samples` samples in `seconds`; capacity and AU as given.
EpochResult Epoch(uint64_t samples, double seconds, double capacity = 0, double au = 0) {
  EpochResult e;
  e.samples = samples;
  e.seconds = seconds;
  e.bytes = samples * 1000;
  e.capacity_samples_per_sec = capacity;
  e.au = au;
  e.sample_lat.Add(1000);
  return e;
}

CompareRun RunOf(const std::string& layout, const std::string& storage, const std::string& cache,
                 int workers, std::vector<EpochResult> epochs, double required = 0,
                 double compute = 0) {
  CompareRun r;
  r.layout = layout;
  r.storage = storage;
  r.cache = *ds::bench::ParseCacheState(cache);
  r.workers = workers;
  r.result.epochs = std::move(epochs);
  r.result.required_samples_per_sec = required;
  r.result.compute_time = compute;
  ds::bench::SummarizeRun(&r);
  return r;
}

const CompareRun& Find(const CompareResult& r, const std::string& layout,
                       const std::string& storage, const std::string& cache) {
  for (const auto& run : r.runs) {
    if (run.layout == layout && run.storage == storage && ds::bench::Name(run.cache) == cache) {
      return run;
    }
  }
  FAIL("no run " << layout << " " << storage << " " << cache);
  return r.runs.front();
}

}  // namespace

TEST_CASE("compare: a run's summary is the median of its measured epochs", "[bench]") {
  // Cold: every epoch counts; median of 100, 300, 200 samples/s.
  CompareRun cold = RunOf("dir", "local", "cold", 4, {Epoch(100, 1), Epoch(300, 1), Epoch(200, 1)});
  CHECK(cold.samples_per_sec == Approx(200));
  CHECK(cold.bytes_per_sec == Approx(200000));
  CHECK_FALSE(cold.au);
  // Warm: the first epoch only primes the cache, however slow it was.
  CompareRun warm = RunOf("dir", "local", "warm", 4, {Epoch(10, 1), Epoch(400, 1), Epoch(600, 1)});
  CHECK(warm.samples_per_sec == Approx(500));
  CHECK(warm.sample_lat.count() == 2);
  // A warm run of one epoch keeps it.
  CHECK(RunOf("dir", "local", "warm", 4, {Epoch(70, 1)}).samples_per_sec == Approx(70));
  // With a requirement: headroom is capacity / required; with compute, AU is summarised.
  CompareRun acc =
      RunOf("native", "local", "cold", 4, {Epoch(100, 1, 900, 0.95), Epoch(100, 1, 700, 0.85)},
            /*required=*/400, /*compute=*/0.01);
  REQUIRE(acc.au);
  CHECK(*acc.au == Approx(0.9));
  REQUIRE(acc.headroom);
  CHECK(*acc.headroom == Approx(2.0));
}

TEST_CASE("compare: ratios against the tree of the same storage and cache; recommendation",
          "[bench]") {
  CompareOptions o;
  o.layouts = {"dir", "zip", "native"};
  o.slowfs = ds::bench::SlowfsOptions{};
  o.slowfs->meta_latency = 0.001;
  CompareResult r;
  r.baseline = "dir";
  r.runs.push_back(RunOf("dir", "local", "cold", 4, {Epoch(1000, 1)}));
  r.runs.push_back(RunOf("zip", "local", "cold", 4, {Epoch(1500, 1)}));
  r.runs.push_back(RunOf("native", "local", "cold", 4, {Epoch(3000, 1)}));
  r.runs.push_back(RunOf("dir", "slowfs", "cold", 4, {Epoch(100, 1)}));
  r.runs.push_back(RunOf("zip", "slowfs", "cold", 4, {Epoch(600, 1)}));
  r.runs.push_back(RunOf("native", "slowfs", "cold", 4, {Epoch(2400, 1)}));
  for (auto* c : {"warm"}) {
    r.runs.push_back(RunOf("dir", "local", c, 4, {Epoch(1, 1), Epoch(5000, 1)}));
    r.runs.push_back(RunOf("zip", "local", c, 4, {Epoch(1, 1), Epoch(4000, 1)}));
    r.runs.push_back(RunOf("native", "local", c, 4, {Epoch(1, 1), Epoch(10000, 1)}));
    r.runs.push_back(RunOf("dir", "slowfs", c, 4, {Epoch(1, 1), Epoch(800, 1)}));
    r.runs.push_back(RunOf("zip", "slowfs", c, 4, {Epoch(1, 1), Epoch(700, 1)}));
    r.runs.push_back(RunOf("native", "slowfs", c, 4, {Epoch(1, 1), Epoch(8000, 1)}));
  }
  ds::bench::RankAndRecommend(o, &r);
  CHECK(*Find(r, "native", "local", "cold").vs_baseline == Approx(3.0));
  CHECK(*Find(r, "zip", "slowfs", "cold").vs_baseline == Approx(6.0));
  CHECK(*Find(r, "native", "slowfs", "cold").vs_baseline == Approx(24.0));
  CHECK(*Find(r, "native", "local", "warm").vs_baseline == Approx(2.0));
  CHECK(*Find(r, "dir", "slowfs", "warm").vs_baseline == Approx(1.0));
  // The pick is made where storage hurts most: the slow file system, cold.
  INFO(r.recommendation);
  CHECK(r.recommendation.rfind("use native shards: 24x the directory tree cold on slowfs", 0) == 0);
  // One ranked sentence per (storage, cache), best first.
  CHECK(r.recommendation.find("local cold: native 3.0x the directory tree, zip 1.5x") !=
        std::string::npos);
  CHECK(r.recommendation.find("slowfs warm: native 10x the directory tree, zip 0.9x") !=
        std::string::npos);
  // No requirement given: nothing said about feeding the job.
  CHECK(r.recommendation.find("feed") == std::string::npos);
  // The text and JSON agree with the ranking.
  auto j = ds::bench::CompareJson(o, r);
  REQUIRE(j["ranking"].size() == 4);
  CHECK(j["ranking"][0]["storage"] == "local");
  CHECK(j["ranking"][0]["order"][0]["layout"] == "native");
  CHECK(j["ranking"][0]["order"][2]["layout"] == "dir");
  CHECK(j["recommendation"] == r.recommendation);
  CHECK(ds::bench::CompareText(o, r).find("recommendation: use native shards") !=
        std::string::npos);
}

TEST_CASE("compare: which layouts feed the job; capacity ranks when compute is simulated",
          "[bench]") {
  CompareOptions o;
  o.layouts = {"dir", "lmdb", "native"};
  o.caches = {ds::bench::CacheState::kCold};
  CompareResult r;
  r.baseline = "dir";
  // With an accelerator the delivered rate is capped by compute (all deliver ~the same); the
  // loader's capacity ranks, and AU >= 90% decides who feeds the job.
  r.runs.push_back(RunOf("dir", "local", "cold", 4, {Epoch(500, 1, 600, 0.55)}, 800, 0.04));
  r.runs.push_back(RunOf("lmdb", "local", "cold", 4, {Epoch(790, 1, 5000, 0.97)}, 800, 0.04));
  r.runs.push_back(RunOf("native", "local", "cold", 4, {Epoch(800, 1, 9000, 0.98)}, 800, 0.04));
  ds::bench::RankAndRecommend(o, &r);
  INFO(r.recommendation);
  CHECK(*Find(r, "native", "local", "cold").vs_baseline == Approx(15.0));
  // Feeding layouts are named in ranking order.
  CHECK(r.recommendation.rfind("use native shards: 15x the directory tree cold on local disk; "
                               "only native, lmdb feed the job here",
                               0) == 0);
  // Nobody meets it.
  for (auto& run : r.runs) run.au = 0.5;
  ds::bench::RankAndRecommend(o, &r);
  CHECK(r.recommendation.find("no layout feeds the job here") != std::string::npos);
  for (auto& run : r.runs) run.au = 0.95;
  ds::bench::RankAndRecommend(o, &r);
  CHECK(r.recommendation.find("every layout feeds this job here") != std::string::npos);
}

TEST_CASE("compare: the worker sweep finds the fewest workers that meet the rate", "[bench]") {
  std::vector<CompareRun> runs = {RunOf("dir", "local", "cold", 8, {Epoch(900, 1)}, 800),
                                  RunOf("dir", "local", "cold", 1, {Epoch(200, 1)}, 800),
                                  RunOf("dir", "local", "cold", 4, {Epoch(810, 1)}, 800),
                                  RunOf("dir", "local", "cold", 2, {Epoch(400, 1)}, 800)};
  std::vector<const CompareRun*> pts;
  for (const auto& r : runs) pts.push_back(&r);
  CHECK(ds::bench::MinWorkers(pts, 800) == 4);
  CHECK(ds::bench::MinWorkers(pts, 100) == 1);
  CHECK_FALSE(ds::bench::MinWorkers(pts, 1000));
  CHECK_FALSE(ds::bench::MinWorkers(pts, 0));  // no requirement: no answer
  // With an accelerator, AU >= 90% decides, not the delivered rate.
  std::vector<CompareRun> acc = {RunOf("wds", "local", "cold", 1, {Epoch(99, 1, 0, 0.6)}, 100, 1),
                                 RunOf("wds", "local", "cold", 2, {Epoch(99, 1, 0, 0.9)}, 100, 1)};
  CHECK(ds::bench::MinWorkers({&acc[0], &acc[1]}, 100) == 2);
}

TEST_CASE("compare: --workers lists", "[bench]") {
  CHECK(*ds::bench::ParseWorkerList("4") == std::vector<int>{4});
  CHECK(*ds::bench::ParseWorkerList("8,1,4,2,4") == std::vector<int>{1, 2, 4, 8});
  for (const char* bad : {"", "0", "-1", "a", "1,,2", "2,", "4097", "1.5"}) {
    auto r = ds::bench::ParseWorkerList(bad);
    INFO(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("a count or a list like 1,2,4,8") != std::string::npos);
  }
}

TEST_CASE("compare: natural mode reads each layout as its loaders do", "[bench]") {
  using ds::bench::CompareMode;
  using ds::bench::ReplayMode;
  for (const char* l : {"dir", "zip", "lmdb"}) {
    CHECK(CompareMode(std::nullopt, l) == ReplayMode::kMap);
  }
  for (const char* l : {"native", "wds", "tfrecord", "recordio"}) {
    CHECK(CompareMode(std::nullopt, l) == ReplayMode::kStream);
  }
  CHECK(CompareMode(ReplayMode::kMap, "wds") == ReplayMode::kMap);
  CHECK(CompareMode(ReplayMode::kStream, "dir") == ReplayMode::kStream);
  CHECK(std::string(ds::bench::CompareModeName(std::nullopt)) == "natural");
  CHECK(std::string(ds::bench::CompareModeName(ReplayMode::kStream)) == "stream");
}

TEST_CASE("replay worker sweep: the last epoch of each run, the fewest workers that feed the job",
          "[bench]") {
  auto result = [](std::vector<EpochResult> epochs, double required, double compute = 0) {
    ds::bench::ReplayResult r;
    r.epochs = std::move(epochs);
    r.required_samples_per_sec = required;
    r.compute_time = compute;
    return r;
  };
  // Needs 500 samples/s: 1 worker delivers 300, 2 deliver 600 (their first epochs do not count),
  // 4 were interrupted before an epoch.
  std::vector<std::pair<int, ds::bench::ReplayResult>> runs;
  runs.emplace_back(1, result({Epoch(900, 1), Epoch(300, 1)}, 500));
  runs.emplace_back(2, result({Epoch(10, 1), Epoch(1200, 2)}, 500));
  runs.emplace_back(4, result({}, 500));
  auto sw = ds::bench::SweepWorkers(runs);
  REQUIRE(sw.points.size() == 2);
  CHECK(sw.points[0].samples_per_sec == Approx(300));
  CHECK(sw.points[1].samples_per_sec == Approx(600));
  CHECK(sw.required == 500);
  REQUIRE(sw.min_workers);
  CHECK(*sw.min_workers == 2);
  CHECK_FALSE(sw.starves());
  CHECK(ds::bench::WorkerSweepText(sw) ==
        "\nworker sweep (last epoch): 1: 300 samples/s; 2: 600 samples/s;\n"
        "fewest workers that feed the job: 2\n");

  // With a simulated accelerator the bar is AU, not samples/s: none reaches 90%: it starves.
  runs.clear();
  runs.emplace_back(1, result({Epoch(100, 1, 0, 0.5)}, 100, 0.01));
  runs.emplace_back(8, result({Epoch(100, 1, 0, 0.89)}, 100, 0.01));
  sw = ds::bench::SweepWorkers(runs);
  CHECK_FALSE(sw.min_workers);
  CHECK(sw.starves());
  CHECK(ds::bench::WorkerSweepText(sw).find(" 8: 100 samples/s AU 89.0%;\nno worker count tried "
                                            "feeds the job\n") != std::string::npos);

  // No required rate: no pick, and nothing starves.
  runs.clear();
  runs.emplace_back(1, result({Epoch(100, 1)}, 0));
  sw = ds::bench::SweepWorkers(runs);
  CHECK_FALSE(sw.starves());
  CHECK(ds::bench::WorkerSweepText(sw).find("no required rate") != std::string::npos);
  CHECK(ds::bench::SweepWorkers({}).points.empty());
}

TEST_CASE("compare: the ranking marks layouts inside the noise as tied and shows the spread",
          "[bench]") {
  CompareOptions o;
  o.layouts = {"dir", "native", "wds"};
  o.caches = {ds::bench::CacheState::kCold};
  CompareResult r;
  r.baseline = "dir";
  // native 2943 (2900-3000) and dir 2940 (2800-3100) overlap: tied; wds 1000-1100 does not.
  r.runs.push_back(
      RunOf("native", "local", "cold", 4, {Epoch(2900, 1), Epoch(2943, 1), Epoch(3000, 1)}));
  r.runs.push_back(
      RunOf("dir", "local", "cold", 4, {Epoch(2800, 1), Epoch(2940, 1), Epoch(3100, 1)}));
  r.runs.push_back(
      RunOf("wds", "local", "cold", 4, {Epoch(1000, 1), Epoch(1050, 1), Epoch(1100, 1)}));
  ds::bench::RankAndRecommend(o, &r);
  auto j = ds::bench::CompareJson(o, r);
  const auto& order = j["ranking"][0]["order"];
  REQUIRE(order.size() == 3);
  CHECK(order[0]["layout"] == "native");
  CHECK(order[0]["rank"] == "1");
  CHECK(order[1]["layout"] == "dir");
  CHECK(order[1]["rank"] == "=1");
  CHECK(order[1]["tied_with_above"] == true);
  CHECK(order[2]["rank"] == "3");
  CHECK(order[2]["tied_with_above"] == false);
  CHECK(order[1]["score_min"] == Approx(2800));
  CHECK(order[1]["score_max"] == Approx(3100));
  std::string t = ds::bench::CompareText(o, r);
  INFO(t);
  CHECK(t.find("=1   dir") != std::string::npos);
  CHECK(t.find("2800-3100") != std::string::npos);
  CHECK(t.find("=N: tied with the layout above it") != std::string::npos);
  // One measured epoch is never a tie: no noise can be told.
  CompareResult one;
  one.baseline = "dir";
  one.runs.push_back(RunOf("native", "local", "cold", 4, {Epoch(2943, 1)}));
  one.runs.push_back(RunOf("dir", "local", "cold", 4, {Epoch(2940, 1)}));
  ds::bench::RankAndRecommend(o, &one);
  auto j1 = ds::bench::CompareJson(o, one);
  CHECK(j1["ranking"][0]["order"][1]["rank"] == "2");
  CHECK(ds::bench::CompareText(o, one).find("1 epoch") != std::string::npos);
}
