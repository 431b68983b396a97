// bench/storage/storage.h: the PASS/FAIL verdict of `dsbench storage` on hand-made job results, the
// two jobs it runs, and the text and JSON of a run (no IO: tests/e2e/dsbench.sh runs the real
// thing).
#include "bench/storage/storage.h"

#include <catch2/catch.hpp>

using ds::bench::JobResult;
using ds::bench::StorageOptions;

namespace {

// A job that moved `bytes` in `ios` requests over `ms` milliseconds.
JobResult StorageJob(uint64_t bytes, uint64_t ios, double ms) {
  JobResult j;
  j.runtime_ms = ms;
  j.read.io_bytes = bytes;
  j.read.ios = ios;
  return j;
}

StorageOptions Bar(uint64_t min_bw, uint64_t min_iops) {
  StorageOptions o;
  o.min_bw = min_bw;
  o.min_iops = min_iops;
  return o;
}

}  // namespace

TEST_CASE("storage verdict: bandwidth and IOPS against the bar", "[bench]") {
  // 1 GB in 2 s = 500 MB/s; 10,000 IOs in 2 s = 5,000 IOPS: exactly the bar passes.
  JobResult seq = StorageJob(1000000000, 1000, 2000);
  JobResult rnd = StorageJob(40960000, 10000, 2000);
  auto v = ds::bench::JudgeStorage(seq, rnd, Bar(500000000, 5000));
  CHECK(v.bw == Approx(5e8));
  CHECK(v.iops == Approx(5000));
  CHECK(v.bw_pass);
  CHECK(v.iops_pass);
  CHECK(v.pass());

  v = ds::bench::JudgeStorage(seq, rnd, Bar(500000001, 5000));
  CHECK_FALSE(v.bw_pass);
  CHECK(v.iops_pass);
  CHECK_FALSE(v.pass());

  v = ds::bench::JudgeStorage(seq, rnd, Bar(500000000, 5001));
  CHECK(v.bw_pass);
  CHECK_FALSE(v.iops_pass);
  CHECK_FALSE(v.pass());
}

TEST_CASE("storage verdict: a job with no measured runtime reads as 0 and fails", "[bench]") {
  auto v = ds::bench::JudgeStorage(StorageJob(1 << 20, 1, 0), StorageJob(4096, 1, 0), Bar(1, 1));
  CHECK(v.bw == 0);
  CHECK(v.iops == 0);
  CHECK_FALSE(v.pass());
  // A bar of 0 is met by anything, even nothing.
  CHECK(ds::bench::JudgeStorage(StorageJob(0, 0, 0), StorageJob(0, 0, 0), Bar(0, 0)).pass());
}

TEST_CASE("storage jobs: sequential 1 MiB x 4 jobs x iodepth 8, random 4 KiB x iodepth 32",
          "[bench]") {
  StorageOptions o;
  o.path = "/data";
  auto seq = ds::bench::SequentialJob(o);
  CHECK(seq.path == "/data");
  CHECK(seq.rw == ds::bench::RwMode::kRead);
  CHECK(seq.bs == 1u << 20);
  CHECK(seq.numjobs == 4);
  CHECK(seq.iodepth == 8);
  CHECK(seq.size == 8ull << 30);
  CHECK(seq.runtime == 30);
  CHECK(seq.ramp_time == 2);
  CHECK(seq.keep);  // the random job reuses the file
  CHECK(seq.group_reporting);
  CHECK(seq.ioengine == "io_uring");
  auto rnd = ds::bench::RandomJob(o);
  CHECK(rnd.rw == ds::bench::RwMode::kRandRead);
  CHECK(rnd.bs == 4096);
  CHECK(rnd.numjobs == 1);
  CHECK(rnd.iodepth == 32);
  CHECK_FALSE(rnd.keep);

  o.quick = true;
  CHECK(ds::bench::SequentialJob(o).size == 1ull << 30);
  CHECK(ds::bench::SequentialJob(o).runtime == 5);
  o.size = 16 << 20;
  o.runtime = 0.3;
  CHECK(ds::bench::SequentialJob(o).size == 16u << 20);
  CHECK(ds::bench::RandomJob(o).runtime == Approx(0.3));
}

TEST_CASE("storage report: JSON verdict and PASS/FAIL lines", "[bench]") {
  StorageOptions o = Bar(500000000, 5000);
  o.quick = true;
  ds::bench::StorageRun r;
  r.seq_job = ds::bench::SequentialJob(o);
  r.rnd_job = ds::bench::RandomJob(o);
  r.seq.jobs.push_back(StorageJob(2000000000, 2000, 2000));
  r.rnd.jobs.push_back(StorageJob(4096 * 100, 100, 1000));
  r.verdict = ds::bench::JudgeStorage(r.seq.jobs[0], r.rnd.jobs[0], o);
  auto j = ds::bench::StorageJson(o, r);
  CHECK(j["verdict"]["bw_bytes"].get<double>() == Approx(1e9));
  CHECK(j["verdict"]["bw_pass"] == true);
  CHECK(j["verdict"]["iops_pass"] == false);
  CHECK(j["verdict"]["pass"] == false);
  CHECK(j["verdict"]["quick"] == true);
  CHECK(j["verdict"]["min_iops"] == 5000);
  CHECK(j["sequential_read"]["read"]["io_bytes"] == 2000000000);
  std::string t = ds::bench::StorageText(o, r);
  CHECK(t.find("sequential 1 MiB read: 1.0 GB/s  (bar 500.0 MB/s)  PASS") != std::string::npos);
  CHECK(t.find("random 4 KiB read:     100 IOPS  (bar 5000)  FAIL") != std::string::npos);
  CHECK(t.find("`quick`: a first look") != std::string::npos);
}
