// bench/io/ranks.h: an MPI job's per-rank results, as rank 0 receives them (encoded, decoded) and
// adds them up: the wire form loses nothing, the aggregate's bytes and IOs are the ranks' sums
// over IOR's window, merged latency percentiles match an exact sort of every rank's latencies,
// and the slowest rank is named. The same code runs under mpirun in tests/e2e/mpi.sh.
#include "bench/io/ranks.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <optional>
#include <thread>
#include <vector>

#include "bench/meta/meta_ranks.h"
#include "src/random.h"
#include "test_util.h"
#include "thread_job.h"

using namespace ds;
using namespace ds::bench;

namespace {

// A rank whose `n` reads of 1 MiB took log-normal latencies around `median_ns`, measured from
// `start_ms` to `end_ms` after the barrier. Every latency also goes into `all`.
RankIo MakeRank(int rank, double median_ns, int n, double start_ms, double end_ms,
                std::vector<uint64_t>* all, uint64_t seed) {
  Rng rng(seed);
  RankIo r;
  r.rank = rank;
  r.host = "node" + std::to_string(rank);
  r.result.name = "seq";
  r.result.start_ns = static_cast<int64_t>(start_ms * 1e6);
  r.result.end_ns = static_cast<int64_t>(end_ms * 1e6);
  r.result.runtime_ms = end_ms - start_ms;
  for (int i = 0; i < n; i++) {
    auto ns = static_cast<uint64_t>(median_ns * std::exp(0.7 * rng.Normal()));
    r.result.read.clat.Add(ns);
    r.result.read.io_bytes += 1 << 20;
    r.result.read.ios++;
    all->push_back(ns);
  }
  return r;
}

}  // namespace

TEST_CASE("a rank's results survive the wire exactly", "[bench]") {
  std::vector<uint64_t> all;
  RankIo r = MakeRank(3, 250e3, 5000, 1.5, 812.25, &all, 7);
  r.result.write.io_bytes = 12345;
  r.result.usr_cpu = 12.5;
  auto d = DecodeRankIo(EncodeRankIo(r));
  REQUIRE(d.ok());
  CHECK(d->rank == 3);
  CHECK(d->host == "node3");
  CHECK(d->result.start_ns == r.result.start_ns);
  CHECK(d->result.end_ns == r.result.end_ns);
  CHECK(d->result.write.io_bytes == 12345);
  CHECK(d->result.usr_cpu == 12.5);
  const LatencyHistogram &a = r.result.read.clat, &b = d->result.read.clat;
  CHECK(b.count() == a.count());
  CHECK(b.min() == a.min());
  CHECK(b.max() == a.max());
  CHECK(b.mean() == a.mean());
  CHECK(b.stddev() == a.stddev());
  for (double p : LatencyHistogram::DefaultPercentiles()) CHECK(b.Percentile(p) == a.Percentile(p));

  // One line naming the field that is missing or mistyped (bench/common/rank_wire.h).
  auto missing = DecodeRankIo("{\"rank\": 1}");
  CHECK(missing.status().message() == "a rank's io results: host: missing");
  std::string typed = EncodeRankIo(r);
  typed.replace(typed.find("\"jobs\":"), 7, "\"jobs\":\"x\",\"was\":");
  CHECK(DecodeRankIo(typed).status().message() ==
        "a rank's io results: result.jobs: of the wrong type");
  CHECK(DecodeRankIo("not json").status().message() == "a rank's io results: not JSON");
  // A histogram whose buckets do not add up to its count is refused, not merged.
  std::string bad = EncodeRankIo(r);
  bad.replace(bad.find("\"n\":5000"), 8, "\"n\":5001");
  CHECK(DecodeRankIo(bad).status().code() == Code::kCorruption);
}

TEST_CASE("histogram Import refuses inconsistent parts", "[core]") {
  LatencyHistogram h;
  h.Add(1000);
  h.Add(2000);
  LatencyHistogram::Parts p = h.Export();
  LatencyHistogram g;
  REQUIRE(g.Import(p));
  CHECK(g.Percentile(50) == h.Percentile(50));
  auto out_of_range = p;
  out_of_range.buckets.back().first = LatencyHistogram::kBuckets;
  CHECK_FALSE(g.Import(out_of_range));
  auto unsorted = p;
  std::swap(unsorted.buckets[0], unsorted.buckets[1]);
  CHECK_FALSE(g.Import(unsorted));
  auto miscounted = p;
  miscounted.count = 3;
  CHECK_FALSE(g.Import(miscounted));
  CHECK(g.count() == 2);  // unchanged by the refusals
}

TEST_CASE("the aggregate adds the ranks up over IOR's window", "[bench]") {
  std::vector<uint64_t> all;
  std::vector<RankIo> ranks;
  // Three ranks with different latency spreads: the merged percentiles must be those of all
  // IOs, which no rank's own percentiles give.
  ranks.push_back(MakeRank(0, 80e3, 20000, 2.0, 1000.0, &all, 1));
  ranks.push_back(MakeRank(1, 900e3, 7000, 1.0, 1400.0, &all, 2));  // the slowest
  ranks.push_back(MakeRank(2, 300e3, 12000, 3.0, 1100.0, &all, 3));
  std::vector<RankIo> received;
  for (const auto& r : ranks) {
    auto d = DecodeRankIo(EncodeRankIo(r));  // as rank 0 gets them
    REQUIRE(d.ok());
    received.push_back(*d);
  }
  ClusterIo c = AggregateRanks(received, false);
  CHECK(c.window_ms == Approx(1399.0));  // first start (1.0) to last end (1400.0)
  CHECK(c.aggregate.runtime_ms == Approx(1399.0));
  CHECK(c.aggregate.read.io_bytes == 39000ull << 20);
  CHECK(c.aggregate.read.ios == 39000);
  CHECK(c.ranks[c.slowest].rank == 1);

  std::sort(all.begin(), all.end());
  for (double p : LatencyHistogram::DefaultPercentiles()) {
    auto rank = static_cast<size_t>(std::ceil(p / 100 * static_cast<double>(all.size())));
    double exact = static_cast<double>(all[rank - 1]);
    double got = static_cast<double>(c.aggregate.read.clat.Percentile(p));
    INFO("p" << p << " exact " << exact << " merged " << got);
    CHECK(std::abs(got - exact) <= 0.01 * exact);
  }

  // The JSON: client_stats per rank, and an aggregate whose sums and rates follow from them.
  IoJobOptions o;
  o.bs = 1 << 20;
  nlohmann::json j = ClusterJson(o, c);
  REQUIRE(j["client_stats"].size() == 3);
  uint64_t bytes = 0, ios = 0;
  for (const auto& cl : j["client_stats"]) {
    bytes += cl["read"]["io_bytes"].get<uint64_t>();
    ios += cl["read"]["total_ios"].get<uint64_t>();
  }
  const auto& agg = j["aggregate"];
  CHECK(agg["read"]["io_bytes"].get<uint64_t>() == bytes);
  CHECK(agg["read"]["total_ios"].get<uint64_t>() == ios);
  CHECK(agg["read"]["bw_bytes"].get<double>() ==
        Approx(static_cast<double>(bytes) / 1.399).epsilon(1e-6));
  CHECK(agg["slowest_rank"]["rank"] == 1);
  CHECK(agg["ranks"] == 3);
  CHECK(j["client_stats"][1]["hostname"] == "node1");
  CHECK(ClusterText(o, c).find("slowest rank: 1 (node1)") != std::string::npos);
}

TEST_CASE("%r in a path is the rank", "[bench]") {
  CHECK(WithRank("/scratch/%r/x%r", 12) == "/scratch/12/x12");
  CHECK(WithRank("/plain", 3) == "/plain");
}

TEST_CASE("meta ranks: wire, sums over the slowest rank's time", "[bench]") {
  std::vector<RankMeta> ranks;
  for (int r = 0; r < 3; r++) {
    RankMeta m{r, "h" + std::to_string(r), {}};
    for (MetaPhase p : {MetaPhase::kCreate, MetaPhase::kStat}) {
      MetaPhaseResult x;
      x.phase = p;
      x.ops = 100;
      x.seconds = r == 1 ? 2.0 : 1.0;
      for (int i = 0; i < 100; i++) x.lat.Add(1000 + static_cast<uint64_t>(r) * 100);
      m.phases.push_back(std::move(x));
    }
    auto d = DecodeRankMeta(EncodeRankMeta(m));
    REQUIRE(d.ok());
    ranks.push_back(std::move(*d));
  }
  auto phases = AggregateMeta(ranks);
  REQUIRE(phases.size() == 2);
  CHECK(phases[1].phase == MetaPhase::kStat);
  CHECK(phases[0].ops == 300);
  CHECK(phases[0].seconds == 2.0);
  CHECK(ranks[phases[0].slowest].rank == 1);
  CHECK(phases[0].lat.count() == 300);
  auto j = ClusterMetaJson(ranks, phases, true);
  CHECK(j["phases"][0]["ops_per_sec"].get<double>() == Approx(150));
  CHECK(j["phases"][0]["name"] == "create");
  CHECK_FALSE(DecodeRankMeta(R"({"rank":0,"host":"x","phases":[{"phase":9}]})").ok());
}

TEST_CASE("a meta rank's failure stops every rank at the next phase; files go", "[bench]") {
  // Two ranks on threads, each its own tree. Rank 1's files vanish before the stat phase, so its
  // stat phase fails; at the start of the read phase every rank learns it and stops.
  test::TempDir dir;
  test::Board board(2);
  std::vector<std::string> steps;
  board.on_step = [&](std::string_view what) {
    steps.emplace_back(what);
    if (what == "the start of the stat phase") {
      for (const auto& e : std::filesystem::recursive_directory_iterator(dir / "r1")) {
        if (e.is_regular_file()) std::filesystem::remove(e.path());
      }
    }
  };
  std::vector<Result<MetaResult>> results(2, Status(Code::kInternal, "not run"));
  std::vector<std::optional<JobFailure>> failures(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; r++) {
    ranks.emplace_back([&, r] {
      std::filesystem::create_directory(dir / ("r" + std::to_string(r)));
      test::ThreadJob job(&board, r);
      MetaOptions o;
      o.path = dir / ("r" + std::to_string(r));
      o.files = 20;
      o.threads = 2;
      o.files_per_dir = 10;
      o.job = &job;
      results[r] = RunMeta(o);
      failures[r] = job.agreed_failure();
    });
  }
  for (auto& t : ranks) t.join();
  CHECK(steps == std::vector<std::string>{"the start of the create phase",
                                          "the start of the stat phase",
                                          "the start of the read phase"});
  for (int r = 0; r < 2; r++) {
    INFO("rank " << r);
    REQUIRE_FALSE(results[r].ok());
    REQUIRE(failures[r].has_value());
    // Rank 0 returns rank 1's failure, named; rank 1 its own (one of its threads').
    if (r == 0) {
      CHECK(results[r].status().message() == "rank 1 of 2: " + failures[r]->status.message());
    } else {
      CHECK_THAT(results[r].status().message(), Catch::Contains("stat: No such file"));
    }
    CHECK(failures[r]->rank == 1);
    CHECK(failures[r]->host == "thread1");
    CHECK(failures[r]->status.message().find("stat") != std::string::npos);
    CHECK(std::filesystem::is_empty(dir / ("r" + std::to_string(r))));  // its files removed
  }
}

TEST_CASE("an io rank whose test file fails stops every rank at the start", "[bench]") {
  // Rank 1's PATH does not exist: every rank learns it at the start barrier, before any IO, and
  // rank 0's laid-out file is removed.
  test::TempDir dir;
  test::Board board(2);
  std::vector<Result<IoRun>> results(2, Status(Code::kInternal, "not run"));
  std::vector<std::optional<JobFailure>> failures(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; r++) {
    ranks.emplace_back([&, r] {
      test::ThreadJob job(&board, r);
      IoJobOptions o;
      o.name = "r" + std::to_string(r);
      o.path = r == 0 ? dir.path() : dir / "missing";
      o.size = 1 << 20;
      o.rw = RwMode::kRandRead;
      o.ioengine = "psync";
      o.runtime = 1;
      IoHooks hooks;
      hooks.job = &job;
      results[r] = RunIoJobs(o, hooks);
      failures[r] = job.agreed_failure();
    });
  }
  for (auto& t : ranks) t.join();
  for (int r = 0; r < 2; r++) {
    INFO("rank " << r);
    REQUIRE_FALSE(results[r].ok());
    REQUIRE(failures[r].has_value());
    CHECK(failures[r]->rank == 1);
    CHECK(failures[r]->status.message().find("missing") != std::string::npos);
  }
  CHECK(std::filesystem::is_empty(dir.path()));
}
