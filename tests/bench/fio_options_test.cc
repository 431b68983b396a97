// fio's option language (bench/io/fio_options.h): job files, the command line, precedence, and
// the refusals; and the rule that a job file is never a test target (bench/io/io_job.h).
#include "bench/io/fio_options.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "test_util.h"

namespace ds::bench {
namespace {

Result<FioSpec> Parse(std::vector<std::string> args) { return ParseFioArgs(args, IoJobOptions{}); }

constexpr char kJob[] = R"(; a runbook's job file
[global]
directory=/tmp
size=16M
bs=4k
  # an indented comment
ioengine=psync

[seqread]
rw=read
numjobs=2

[randwrite]
stonewall
rw=randwrite
bs=64k
iodepth=4
runtime=1m
time_based
)";

}  // namespace

TEST_CASE("fio job file: [global] applies to each job, a job's own options win", "[bench]") {
  test::TempDir dir;
  const std::string job = dir / "run.fio";
  test::WriteFile(job, kJob);
  auto spec = Parse({job});
  REQUIRE(spec.ok());
  REQUIRE(spec->jobs.size() == 2);
  const IoJobOptions& a = spec->jobs[0];
  const IoJobOptions& b = spec->jobs[1];
  CHECK(a.name == "seqread");
  CHECK(a.path == "/tmp");
  CHECK(a.size == (16u << 20));
  CHECK(a.bs == 4096);
  CHECK(a.numjobs == 2);
  CHECK(a.rw == RwMode::kRead);
  CHECK(a.groupid == 0);
  CHECK(b.name == "randwrite");
  CHECK(b.bs == (64u << 10));  // its own bs over [global]'s
  CHECK(b.rw == RwMode::kRandWrite);
  CHECK(b.stonewall);
  CHECK(b.groupid == 1);  // stonewall starts a new reporting group
  CHECK(b.runtime == 60);
  CHECK(b.time_based);
  // "job options" echo the section's own options with a value, as fio does.
  CHECK(a.given ==
        std::vector<std::pair<std::string, std::string>>{{"rw", "read"}, {"numjobs", "2"}});
  CHECK(spec->global_given.size() == 4);

  SECTION("the command line overrides the file; a later repetition wins") {
    auto o = Parse({job, "--bs=8k", "--iodepth", "2", "--bs=16k"});
    REQUIRE(o.ok());
    for (const auto& j : o->jobs) {
      CHECK(j.bs == (16u << 10));
      CHECK(j.iodepth == 2);
    }
  }
  SECTION("--section runs only the sections named") {
    auto o = Parse({job, "--section=randwrite"});
    REQUIRE(o.ok());
    REQUIRE(o->jobs.size() == 1);
    CHECK(o->jobs[0].name == "randwrite");
    auto none = Parse({job, "--section=nosuch"});
    REQUIRE_FALSE(none.ok());
    CHECK_THAT(none.status().message(), Catch::Contains("no job section"));
  }
}

TEST_CASE("fio command line: each --name starts a job; options before it apply to all", "[bench]") {
  auto spec = Parse({"--size=1M", "--directory=/tmp", "--name=a", "--rw=randread", "--name=b",
                     "--bs", "1M", "--new_group", "--output-format=json,normal"});
  REQUIRE(spec.ok());
  REQUIRE(spec->jobs.size() == 2);
  CHECK(spec->jobs[0].name == "a");
  CHECK(spec->jobs[0].rw == RwMode::kRandRead);
  CHECK(spec->jobs[0].size == (1u << 20));
  CHECK(spec->jobs[1].name == "b");
  CHECK(spec->jobs[1].rw == RwMode::kRead);
  CHECK(spec->jobs[1].bs == (1u << 20));
  CHECK(spec->jobs[1].groupid == 1);  // new_group
  CHECK_FALSE(spec->jobs[1].stonewall);
  CHECK(spec->out.formats == std::vector<std::string>{"json", "normal"});
}

TEST_CASE("fio options: units, aliases and fio's meanings", "[bench]") {
  auto spec =
      Parse({"/tmp", "--readwrite=readwrite", "--rwmixwrite=30", "--blocksize=8k", "--thinktime=50",
             "--startdelay=100ms", "--runtime=2m", "--buffered=1", "--io_size=1G", "--loops=3",
             "--rate=50M", "--cpus_allowed=0-1", "--percentile_list=50:99.9:99", "--unlink=0",
             "--ioengine=sync", "--direct", "1"});
  REQUIRE(spec.ok());
  const IoJobOptions& o = spec->jobs[0];
  CHECK(o.path == "/tmp");
  CHECK(o.rw == RwMode::kRw);
  CHECK(o.rwmixread == 70);
  CHECK(o.bs == 8192);
  CHECK(o.thinktime == Approx(50e-6));  // fio: microseconds without a unit
  CHECK(o.startdelay == Approx(0.1));
  CHECK(o.runtime == 120);
  CHECK(o.io_size == (1ull << 30));
  CHECK(o.loops == 3);
  CHECK(o.rate == (50u << 20));
  CHECK(o.cpus == std::vector<int>{0, 1});
  CHECK(o.percentiles == std::vector<double>{50, 99, 99.9});
  CHECK(o.keep);                 // unlink=0
  CHECK(o.ioengine == "psync");  // sync
  CHECK(o.direct);               // `--direct 1`, after --buffered=1: the later one wins
  auto posix = Parse({"/tmp", "--ioengine=posixaio"});
  REQUIRE(posix.ok());
  CHECK(posix->jobs[0].ioengine == "psync");
  REQUIRE(posix->notes.size() == 1);  // said, not silent
}

TEST_CASE("fio options: bsrange, bssplit and random_distribution; a later bs wins", "[bench]") {
  auto r = Parse({"/tmp", "--bsrange=4k-64k", "--random_distribution=zipf:1.2"});
  REQUIRE(r.ok());
  const IoJobOptions& o = r->jobs.at(0);
  CHECK(o.bs == 4096);
  CHECK(o.IoSizes().max == 65536);
  CHECK(o.distribution.kind == Distribution::kZipf);
  CHECK(o.distribution.param == 1.2);
  auto later = Parse({"/tmp", "--bssplit=4k/50:1m/50", "--bs=8k"});
  REQUIRE(later.ok());
  CHECK(later->jobs.at(0).IoSizes().fixed());
  CHECK(later->jobs.at(0).IoSizes().max == 8192);
  auto split = Parse({"/tmp", "--bs=8k", "--bssplit=4k/50:1m/50"});
  REQUIRE(split.ok());
  CHECK(split->jobs.at(0).IoSizes().split.size() == 2);
}

TEST_CASE("fio options: nrfiles splits size, filesize sizes each file; --eta, --status-interval",
          "[bench]") {
  auto split = Parse({"/tmp", "--size=1M", "--nrfiles=4", "--file_service_type=random:8"});
  REQUIRE(split.ok());
  const IoJobOptions& s = split->jobs.at(0);
  CHECK(s.nrfiles == 4);
  CHECK(s.size == 256 * 1024);  // per file
  CHECK(s.file_service == FileService::kRandom);
  CHECK(s.file_service_n == 8);
  auto each =
      Parse({"/tmp", "--filesize=128k", "--nrfiles=3", "--eta=never", "--status-interval=2s"});
  REQUIRE(each.ok());
  CHECK(each->jobs.at(0).size == 128 * 1024);
  CHECK(each->out.eta == FioOutput::Eta::kNever);
  CHECK(each->out.status_interval == 2.0);
  CHECK(!Parse({"/tmp", "--nrfiles=0"}).ok());
  CHECK(!Parse({"/tmp", "--status-interval=0"}).ok());
  CHECK(!Parse({"/tmp", "--file_service_type=roundrobin:0"}).ok());
}

TEST_CASE("fio options: what dsbench does not support is refused by name", "[bench]") {
  auto cli = Parse({"/tmp", "--verify_pattern=0xff"});
  REQUIRE_FALSE(cli.ok());
  CHECK(cli.status().code() == Code::kInvalidArgument);
  CHECK_THAT(cli.status().message(), Catch::Contains("--verify_pattern") &&
                                         Catch::Contains("not an option dsbench io supports"));
  test::TempDir dir;
  const std::string job = dir / "bad.fio";
  test::WriteFile(job, "[global]\nsize=1M\n\n[j]\nfrobnicate=3\n");
  auto file = Parse({job});
  REQUIRE_FALSE(file.ok());
  CHECK_THAT(file.status().message(), Catch::Contains(job + ":5") && Catch::Contains("frobnicate"));
  test::WriteFile(job, "[j]\nfilename=$HOME/x\n");
  auto var = Parse({job});
  REQUIRE_FALSE(var.ok());
  CHECK_THAT(var.status().message(), Catch::Contains(":2") && Catch::Contains("$VAR"));
  for (std::vector<std::string> bad : {std::vector<std::string>{"/tmp", "--rw=trimwrite"},
                                       {"/tmp", "--bs=4k,8k"},
                                       {"/tmp", "--size=50%"},
                                       {"/tmp", "--random_distribution=zoned:50/5:50/95"},
                                       {"/tmp", "--bsrange=4k-8k,16k-32k"},
                                       {"/tmp", "--time_based"},
                                       {"/tmp", "--iodepth=0"},
                                       {"/tmp", "--runtime=5parsecs"},
                                       {"/tmp", "--output-format=csv"},
                                       {"/tmp", "--bs"},
                                       {"/tmp", "/var"},
                                       {}}) {
    INFO(bad.size());
    auto r = Parse(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Code::kInvalidArgument);
  }
}

TEST_CASE("a fio job file is never a test target", "[bench]") {
  test::TempDir dir;
  const std::string job = dir / "job.ini";
  const std::string text = "[seq]\nrw=read\nsize=1M\n";
  test::WriteFile(job, text);
  test::WriteFile(dir / "data.bin", std::string(1 << 20, 'x'));
  CHECK(LooksLikeJobFile(job));              // text starting with '['
  CHECK(LooksLikeJobFile(dir / "new.fio"));  // the name, even before it exists
  CHECK_FALSE(LooksLikeJobFile(dir / "data.bin"));
  CHECK_FALSE(LooksLikeJobFile(dir.path()));
  IoJobOptions o;
  o.path = job;
  o.rw = RwMode::kWrite;
  o.size = 4096;
  o.allow_overwrite = true;  // not even then
  auto f = PrepareTestFile(o);
  REQUIRE_FALSE(f.ok());
  CHECK_THAT(f.status().message(), Catch::Contains("job file, never a test target"));
  CHECK(test::ReadFile(job) == text);
  o.path = dir / "new.fio";  // fio's filename= naming a job file that is not there yet
  o.create_file = true;
  REQUIRE_FALSE(PrepareTestFile(o).ok());
  struct stat st;
  CHECK(::stat(o.path.c_str(), &st) != 0);
}

TEST_CASE("numjobs in a directory: a file per job, NAME.N.0, as fio names them", "[bench]") {
  test::TempDir dir;
  IoJobOptions o;
  o.name = "seq";
  o.path = dir.path();
  o.size = 64 << 10;
  o.numjobs = 3;
  o.keep = true;
  auto run = RunIoJobs(o);
  REQUIRE(run.ok());
  REQUIRE(run->jobs.size() == 3);
  for (int n = 0; n < 3; n++) {
    struct stat st;
    std::string file = dir / ("seq." + std::to_string(n) + ".0");
    REQUIRE(::stat(file.c_str(), &st) == 0);
    CHECK(st.st_size == (64 << 10));
    CHECK(run->jobs[n].read.io_bytes == (64u << 10));  // each read its own file once
  }
}

TEST_CASE("stonewall: the jobs after it start when the ones before have finished", "[bench]") {
  test::TempDir dir;
  IoJobOptions a;
  a.name = "a";
  a.path = dir.path();
  a.size = 256 << 10;
  a.rw = RwMode::kWrite;
  a.end_fsync = true;
  a.fsync_every = 16;
  IoJobOptions b = a;
  b.name = "b";
  b.rw = RwMode::kRead;
  b.stonewall = true;
  b.groupid = 1;
  std::vector<IoJobOptions> jobs{a, b};
  auto run = RunIoJobs(jobs);
  REQUIRE(run.ok());
  REQUIRE(run->jobs.size() == 2);
  CHECK(run->jobs[0].spec == 0);
  CHECK(run->jobs[1].spec == 1);
  CHECK(run->jobs[0].end_ns <= run->jobs[1].start_ns);
  CHECK(run->jobs[0].syncs == 3);  // fsync=16 over 64 writes: none after the last; end_fsync's
                                   // is not counted either (fio)
  auto j = JobsJson(jobs, *run, true, {});
  CHECK(j["jobs"][0]["sync"]["total_ios"] == 3);
  CHECK(j["jobs"][1]["groupid"] == 1);
  CHECK(j["jobs"][0]["write"]["clat_ns"].contains("bins"));
  CHECK_FALSE(j["jobs"][0]["read"]["clat_ns"].contains("percentile"));  // empty, as fio
  CHECK(j["jobs"][0]["trim"]["total_ios"] == 0);
}

// IoJobOptions::Validate is the one place the options are checked against each other: the
// parser runs it for every job it builds (naming the job), RunIoJobs again.
TEST_CASE("fio options: a built job is validated, its name in the error", "[bench]") {
  auto r = Parse({"/tmp", "--name=seq", "--direct=1", "--bs=1000"});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kInvalidArgument);
  CHECK(r.status().message() ==
        "job 'seq': `bs` 1000 is not a multiple of 512, which "
        "`direct=1` needs");
  auto v = Parse({"/tmp", "--rw=read", "--verify=crc32c"});
  REQUIRE_FALSE(v.ok());
  CHECK_THAT(v.status().message(), Catch::StartsWith("job 'dsbench': verify checks the blocks"));
  IoJobOptions o;
  o.time_based = true;
  CHECK(o.Validate().code() == Code::kInvalidArgument);
  o.runtime = 1;
  CHECK(o.Validate().ok());
}

}  // namespace ds::bench
