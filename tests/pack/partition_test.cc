// The partitioned convert (pack/partition.h) in process: N threads stand for the N ranks of
// `mpirun -n N dspack convert` (tests/thread_job.h). The MPI wire itself is tested end to end by
// tests/e2e/mpi_convert.sh.
#include "pack/partition.h"

#include <fmt/format.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <set>
#include <thread>

#include "datasets/synth.h"
#include "pack/packer.h"
#include "test_util.h"
#include "thread_job.h"

using namespace ds;

namespace {

using test::Board;
using test::ThreadJob;

ConvertOptions PartOpts(const std::string& src, const std::string& out) {
  ConvertOptions o;
  o.src = src;
  o.out = out;
  o.layout.shard_size = 64 << 10;
  o.layout.align = 4096;
  o.label_from_dir = true;
  o.shuffle_seed = 3;
  o.threads = 2;
  return o;
}

// Runs Convert on n threads, one Job each; returns every thread's status and report.
std::vector<std::pair<Status, ConvertReport>> RunJob(const ConvertOptions& o, int n,
                                                     Board* board = nullptr) {
  Board own(n);
  Board* b = board ? board : &own;
  std::vector<std::pair<Status, ConvertReport>> out(n);
  std::vector<ThreadJob> jobs;
  for (int r = 0; r < n; r++) jobs.emplace_back(b, r);
  std::vector<std::thread> ts;
  for (int r = 0; r < n; r++) {
    ts.emplace_back([&, r] {
      ConvertOptions mine = o;
      mine.job = &jobs[r];
      out[r].first = Convert(mine, &out[r].second);
    });
  }
  for (auto& t : ts) t.join();
  return out;
}

std::string PartSynth(const test::TempDir& dir, uint64_t n) {
  SynthOptions so{"imagenet-like", dir / "src", n, 7, 2};
  SynthReport r;
  REQUIRE(Synthesize(so, &r).ok());
  return so.dir;
}

}  // namespace

TEST_CASE("shard ranges are contiguous, cover every shard and split by bytes",
          "[pack][partition]") {
  CHECK(AssignShardRanges({10, 10, 10, 10}, 2) == std::vector<uint64_t>{0, 2, 4});
  CHECK(AssignShardRanges({10, 10, 10, 10}, 1) == std::vector<uint64_t>{0, 4});
  // By bytes, not by count: the big first shard is rank 0's alone.
  CHECK(AssignShardRanges({30, 10, 10, 10}, 2) == std::vector<uint64_t>{0, 1, 4});
  // More ranks than shards: the last ranks get empty ranges.
  CHECK(AssignShardRanges({5, 5}, 4) == std::vector<uint64_t>{0, 1, 1, 2, 2});
  CHECK(AssignShardRanges({}, 3) == std::vector<uint64_t>{0, 0, 0, 0});
  // Byte totals past 2^64 / n do not overflow.
  uint64_t big = uint64_t{1} << 62;
  CHECK(AssignShardRanges({big, big, big, big}, 4) == std::vector<uint64_t>{0, 1, 2, 3, 4});
  for (int n = 1; n <= 7; n++) {
    std::vector<uint64_t> bytes;
    for (int k = 0; k < 23; k++) bytes.push_back(1 + (k * 37) % 11);
    auto first = AssignShardRanges(bytes, n);
    REQUIRE(first.size() == static_cast<size_t>(n) + 1);
    CHECK(first.front() == 0);
    CHECK(first.back() == bytes.size());
    for (int r = 0; r < n; r++) CHECK(first[r] <= first[r + 1]);
  }
}

TEST_CASE("Job::Agree: the lowest failed rank's status, prefixed, on every rank",
          "[pack][partition]") {
  Board b(3);
  std::vector<Status> got(3);
  std::vector<std::thread> ts;
  for (int r = 0; r < 3; r++) {
    ts.emplace_back([&, r] {
      ThreadJob job(&b, r);
      Status mine = r == 0 ? Status::Ok()
                           : Status(r == 1 ? Code::kBadInput : Code::kIOError, "rank's own", 5);
      got[r] = job.Agree(mine, "a step");
    });
  }
  for (auto& t : ts) t.join();
  for (const Status& s : got) {
    CHECK(s.code() == Code::kBadInput);
    CHECK(s.err() == 5);
    CHECK(s.message() == "rank 1 of 3: rank's own");
  }
}

TEST_CASE("Job's collectives over AllGather: sum, broadcast, gather, barrier",
          "[pack][partition]") {
  Board b(3);
  std::vector<std::string> got(3);
  std::vector<std::thread> ts;
  for (int r = 0; r < 3; r++) {
    ts.emplace_back([&, r] {
      ThreadJob job(&b, r);
      auto sum = job.Sum(static_cast<uint64_t>(r + 1), "a sum");
      std::string bytes = r == 0 ? "from the root" : "mine";
      Status cast = job.Broadcast(&bytes, "a broadcast");
      auto all = job.Gather(std::to_string(r), "a gather");
      Status met = job.Barrier("a barrier");
      got[r] = fmt::format("{} {} {} {} {}", sum.ok() ? *sum : 0, bytes, cast.ok(),
                           all.ok() ? all->size() : 99, met.ok());
    });
  }
  for (auto& t : ts) t.join();
  CHECK(got[0] == "6 from the root true 3 true");
  CHECK(got[1] == "6 from the root true 0 true");
  CHECK(got[2] == "6 from the root true 0 true");
}

TEST_CASE("a partitioned convert is byte-identical to one process for any rank count",
          "[pack][partition]") {
  test::TempDir dir;
  std::string src = PartSynth(dir, 120);
  ConvertReport one;
  REQUIRE(Convert(PartOpts(src, dir / "ref"), &one).ok());
  REQUIRE(one.shards > 4);
  std::string ref = test::DirBytes(dir / "ref");
  for (int n : {2, 3, static_cast<int>(one.shards) + 2}) {
    std::string out = dir / ("out" + std::to_string(n));
    auto res = RunJob(PartOpts(src, out), n);
    for (const auto& [s, r] : res) {
      INFO(n << " ranks: " << s.ToString());
      REQUIRE(s.ok());
      CHECK(r.ranks == n);
    }
    CHECK(res[0].second.samples == 120);
    CHECK(res[0].second.shards == one.shards);
    CHECK(test::DirBytes(out) == ref);
  }
}

TEST_CASE("a partitioned convert into wds, tfrecord or recordio is byte-identical too",
          "[pack][partition]") {
  test::TempDir dir;
  std::string src = PartSynth(dir, 90);
  for (Format f : {Format::kWds, Format::kTfrecord, Format::kRecordio}) {
    std::string name(FormatName(f));
    ConvertOptions o = PartOpts(src, dir / (name + "-ref"));
    o.format = f;
    o.layout.align.reset();
    if (f == Format::kWds) o.layout.dali_index = true;  // a sidecar per shard
    ConvertReport one;
    REQUIRE(Convert(o, &one).ok());
    REQUIRE(one.shards > 3);
    std::string ref = test::DirBytes(o.out);
    for (int n : {2, 3, static_cast<int>(one.shards) + 1}) {
      o.out = dir / (name + std::to_string(n));
      auto res = RunJob(o, n);
      for (const auto& [s, r] : res) {
        INFO(name << ", " << n << " ranks: " << s.ToString());
        REQUIRE(s.ok());
      }
      CHECK(res[0].second.shards == one.shards);
      INFO(name << ", " << n << " ranks");
      CHECK(test::DirBytes(o.out) == ref);
    }
  }
}

TEST_CASE("a file that changes size after the plan fails every rank and leaves nothing",
          "[pack][partition]") {
  test::TempDir dir;
  std::string src = PartSynth(dir, 60);
  std::string victim;
  for (const auto& e : std::filesystem::recursive_directory_iterator(src)) {
    if (e.is_regular_file()) victim = e.path();
  }
  Board b(2);
  // Once every rank has every size (the plan is fixed), the file grows.
  bool grown = false;
  b.on_step = [&](std::string_view what) {
    if (what == "the sizes of SRC's files" && !grown) {
      test::WriteFile(victim, test::ReadFile(victim) + "more");
      grown = true;
    }
  };
  std::string out = dir / "out";
  auto res = RunJob(PartOpts(src, out), 2, &b);
  for (const auto& [s, r] : res) {
    CHECK(s.code() == Code::kBadInput);
    CHECK_THAT(s.message(), Catch::Contains("changed size since the shards were planned"));
    CHECK_THAT(s.message(), Catch::StartsWith("rank "));
  }
  CHECK(!std::filesystem::exists(out));
}

TEST_CASE("a partitioned convert refuses what does not partition, before any work",
          "[pack][partition]") {
  test::TempDir dir;
  std::string src = PartSynth(dir, 10);
  ConvertOptions lmdb = PartOpts(src, dir / "lmdb");
  lmdb.format = Format::kLmdb;
  lmdb.layout.align.reset();
  lmdb.layout.shard_size.reset();
  ConvertOptions skip = PartOpts(src, dir / "skip");
  skip.on_error = OnError::kSkip;
  for (const ConvertOptions& o : {lmdb, skip}) {
    for (const auto& [s, r] : RunJob(o, 2)) {
      CHECK(s.code() == Code::kInvalidArgument);
      CHECK(!std::filesystem::exists(o.out));
    }
  }
}
