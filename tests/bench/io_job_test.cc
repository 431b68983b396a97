// bench/io/io_job.h on real files: rw names, small psync jobs whose IO counts and bytes follow
// from size and bs, the test file's life (made, removed unless keep; a user's file never
// removed), refusals, and the same job through io_uring ([io_uring], see io_engine_test.cc).
#include "bench/io/io_job.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "src/random.h"
#include "test_util.h"

using namespace ds;
using namespace ds::bench;

namespace {

constexpr uint64_t kSize = 1 << 20, kBs = 4096, kBlocks = kSize / kBs;

IoJobOptions JobOf(const std::string& path, RwMode rw) {
  IoJobOptions o;
  o.name = "unit";
  o.path = path;
  o.rw = rw;
  o.bs = kBs;
  o.size = kSize;
  return o;
}

size_t JobEntries(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) n++;
  return n;
}

std::string JobContent(size_t n) {
  std::string s(n, '\0');
  Rng(33).Fill(s.data(), n);
  return s;
}

}  // namespace

TEST_CASE("ParseRw: each mode round-trips through its name, anything else is refused", "[bench]") {
  for (RwMode m : {RwMode::kRead, RwMode::kWrite, RwMode::kRandRead, RwMode::kRandWrite,
                   RwMode::kRandRw, RwMode::kRw, RwMode::kTrim, RwMode::kRandTrim}) {
    auto p = ParseRw(RwName(m));
    REQUIRE(p.ok());
    CHECK(*p == m);
  }
  CHECK(std::string(RwName(RwMode::kRandRw)) == "randrw");
  CHECK(*ParseRw("readwrite") == RwMode::kRw);  // fio's alias
  for (const char* bad : {"", "READ", "trimwrite", "randwr", "read "}) {
    auto p = ParseRw(bad);
    REQUIRE_FALSE(p.ok());
    CHECK(p.status().code() == Code::kInvalidArgument);
    CHECK_THAT(p.status().message(), Catch::Contains(std::string(bad) + ": choose read"));
  }
}

TEST_CASE("RunIoJobs: a job in a directory does size/bs IOs on its own test file", "[bench]") {
  test::TempDir dir;
  const std::string file = dir / "unit.0.0";
  SECTION("read, then the file is removed") {
    auto run = RunIoJobs(JobOf(dir.path(), RwMode::kRead));
    REQUIRE(run.ok());
    REQUIRE(run->jobs.size() == 1);
    const JobResult& r = run->jobs[0];
    CHECK(r.name == "unit");
    CHECK(r.read.ios == kBlocks);
    CHECK(r.read.io_bytes == kSize);
    CHECK(r.read.clat.count() == kBlocks);
    CHECK(r.write.ios == 0);
    CHECK_FALSE(run->disk);  // no disk_device given
    auto j = JobsJson(JobOf(dir.path(), RwMode::kRead), *run);
    CHECK(j["jobs"][0]["read"]["io_bytes"] == kSize);
    CHECK(j["jobs"][0]["read"]["total_ios"] == kBlocks);
    CHECK(j["jobs"][0]["job options"]["rw"] == "read");
    CHECK(JobEntries(dir.path()) == 0);
  }
  SECTION("randwrite, then the file is removed") {
    auto run = RunIoJobs(JobOf(dir.path(), RwMode::kRandWrite));
    REQUIRE(run.ok());
    CHECK(run->jobs[0].write.ios == kBlocks);
    CHECK(run->jobs[0].write.io_bytes == kSize);
    CHECK(run->jobs[0].read.ios == 0);
    CHECK(JobEntries(dir.path()) == 0);
  }
  SECTION("randrw splits the IOs between reads and writes") {
    IoJobOptions o = JobOf(dir.path(), RwMode::kRandRw);
    o.rwmixread = 70;
    auto run = RunIoJobs(o);
    REQUIRE(run.ok());
    const JobResult& r = run->jobs[0];
    CHECK(r.read.ios + r.write.ios == kBlocks);
    CHECK(r.read.io_bytes + r.write.io_bytes == kSize);
    CHECK(r.read.ios > r.write.ios);  // 70% of 256 draws
    CHECK(r.write.ios > 0);
  }
  SECTION("keep leaves the file, size bytes long") {
    IoJobOptions o = JobOf(dir.path(), RwMode::kRead);
    o.keep = true;
    REQUIRE(RunIoJobs(o).ok());
    struct stat st;
    REQUIRE(::stat(file.c_str(), &st) == 0);
    CHECK(static_cast<uint64_t>(st.st_size) == kSize);
  }
  SECTION("numjobs: one result per job, or one merged with group_reporting") {
    IoJobOptions o = JobOf(dir.path(), RwMode::kRandRead);
    o.numjobs = 2;
    auto each = RunIoJobs(o);
    REQUIRE(each.ok());
    REQUIRE(each->jobs.size() == 2);
    for (const auto& r : each->jobs) CHECK(r.read.ios == kBlocks);
    o.group_reporting = true;
    auto merged = RunIoJobs(o);
    REQUIRE(merged.ok());
    REQUIRE(merged->jobs.size() == 1);
    CHECK(merged->jobs[0].jobs == 2);
    CHECK(merged->jobs[0].read.ios == 2 * kBlocks);
    CHECK(merged->jobs[0].read.io_bytes == 2 * kSize);
    CHECK(merged->jobs[0].read.clat.count() == 2 * kBlocks);
    CHECK(JobEntries(dir.path()) == 0);
  }
}

TEST_CASE("RunIoJobs reads a user's file as it is and never removes it", "[bench]") {
  test::TempDir dir;
  const std::string data = JobContent(kSize);
  test::WriteFile(dir / "mine", data);
  IoJobOptions o = JobOf(dir / "mine", RwMode::kRead);
  o.size = 0;  // the file's size
  auto run = RunIoJobs(o);
  REQUIRE(run.ok());
  CHECK(run->jobs[0].read.ios == kBlocks);
  CHECK(run->jobs[0].read.io_bytes == kSize);
  o.size = kSize / 4;
  run = RunIoJobs(o);
  REQUIRE(run.ok());
  CHECK(run->jobs[0].read.ios == kBlocks / 4);
  CHECK(test::ReadFile(dir / "mine") == data);
  CHECK(JobEntries(dir.path()) == 1);
  // More than the file holds is refused for reads.
  o.size = 2 * kSize;
  auto big = RunIoJobs(o);
  REQUIRE_FALSE(big.ok());
  CHECK(big.status().code() == Code::kInvalidArgument);
  CHECK(test::ReadFile(dir / "mine") == data);
}

TEST_CASE("RunIoJobs refuses bad options and leaves no test file behind", "[bench]") {
  test::TempDir dir;
  auto refused = [&](const IoJobOptions& o, const char* what, Code code = Code::kInvalidArgument) {
    INFO(what);
    auto run = RunIoJobs(o);
    REQUIRE_FALSE(run.ok());
    CHECK(run.status().code() == code);
    CHECK_THAT(run.status().message(), Catch::Contains(what));
    CHECK(JobEntries(dir.path()) == 0);
  };
  IoJobOptions o = JobOf(dir.path(), RwMode::kRead);
  o.bs = 0;
  refused(o, "must be positive");
  o = JobOf(dir.path(), RwMode::kRead);
  o.iodepth = 0;
  refused(o, "must be positive");
  o = JobOf(dir.path(), RwMode::kRead);
  o.size = 0;
  refused(o, "is needed when PATH is a directory");
  o = JobOf(dir / "missing", RwMode::kRead);
  refused(o, "missing: give an existing directory or file", Code::kNotFound);
  o = JobOf(dir.path(), RwMode::kRead);
  o.direct = true;
  o.bs = 1000;
  refused(o, "not a multiple of 512");
  o = JobOf(dir.path(), RwMode::kRead);  // laid out, then refused: the file goes again
  o.size = 8192;
  o.bs = 16384;
  refused(o, "larger than");
}

TEST_CASE("RunIoJobs through io_uring: registered file, fixed buffers, depth 8", "[io_uring]") {
  test::TempDir dir;
  IoJobOptions o = JobOf(dir.path(), RwMode::kRandRead);
  o.ioengine = "io_uring";
  o.iodepth = 8;
  o.iodepth_batch_submit = 4;
  o.registerfiles = true;
  o.fixedbufs = true;
  auto run = RunIoJobs(o);
  REQUIRE(run.ok());
  CHECK(run->jobs[0].read.ios == kBlocks);
  CHECK(run->jobs[0].read.io_bytes == kSize);
  CHECK(run->jobs[0].read.clat.count() == kBlocks);
  o.rw = RwMode::kWrite;
  run = RunIoJobs(o);
  REQUIRE(run.ok());
  CHECK(run->jobs[0].write.ios == kBlocks);
  CHECK(JobEntries(dir.path()) == 0);
}
