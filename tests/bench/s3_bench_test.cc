// bench/s3/s3_bench.h: the figures of `dsbench s3` from hand-made rank results (segments, first
// and last done, the verdict), the ranks' wire codec and the checks of the options (no IO:
// tests/e2e/s3.sh runs the real thing against radosgw).
#include "bench/s3/s3_bench.h"

#include <catch2/catch.hpp>

using ds::bench::S3BenchOptions;
using ds::bench::S3BenchResult;
using ds::bench::S3Op;

namespace {

constexpr int64_t kSec = 1000000000;

// A rank that started at start_ns and did `per_tick` gets of 1000 bytes in each 0.1 s tick.
S3BenchResult Rank(int rank, int64_t start_ns, std::vector<uint64_t> per_tick) {
  S3BenchResult r;
  r.rank = rank;
  r.host = "h";
  r.start_ns = start_ns;
  r.end_ns = start_ns + static_cast<int64_t>(per_tick.size()) * kSec / 10;
  auto& get = r.op[static_cast<int>(S3Op::kGet)];
  for (uint64_t n : per_tick) {
    r.tick_ops.push_back(n);
    r.tick_bytes.push_back(n * 1000);
    get.ops += n;
    get.bytes += n * 1000;
    for (uint64_t i = 0; i < n; i++) {
      get.ttfb.Add(2000000);  // 2 ms
      get.ttlb.Add(3000000);
    }
  }
  return r;
}

}  // namespace

TEST_CASE("s3 bench: segments are whole, sorted fastest first", "[bench]") {
  S3BenchOptions o;
  o.segment = 0.5;
  // 1.2 s: two whole segments of 5 ticks (10 and 20 ops per tick), the last 0.2 s left out.
  std::vector<uint64_t> ticks = {10, 10, 10, 10, 10, 20, 20, 20, 20, 20, 99, 99};
  auto seg = ds::bench::S3Segments(Rank(0, 0, ticks), o.segment);
  REQUIRE(seg.size() == 2);
  CHECK(seg[0].ops_per_s == Approx(200));  // 100 ops in 0.5 s
  CHECK(seg[1].ops_per_s == Approx(100));
  CHECK(seg[0].bytes_per_s == Approx(200000));
}

TEST_CASE("s3 bench: first done counts every rank's work until the first rank ended", "[bench]") {
  S3BenchOptions o;
  // rank 0: 1 s at 10 ops per tick; rank 1: 2 s at 10 ops per tick, both from t=0.
  auto a = Rank(0, 0, std::vector<uint64_t>(10, 10));
  auto b = Rank(1, 0, std::vector<uint64_t>(20, 10));
  auto s = ds::bench::SummarizeS3(o, {a, b});
  CHECK(s.ops == 300);
  CHECK(s.seconds == Approx(2.0));
  CHECK(s.ops_per_s == Approx(150));  // last done: all of it over 2 s
  CHECK(s.first_seconds == Approx(1.0));
  CHECK(s.first_ops_per_s == Approx(200));  // 100 + 100 in the first second
  REQUIRE(s.segments.size() == 2);
  CHECK(s.segments.front().ops_per_s == Approx(200));
  CHECK(s.segments.back().ops_per_s == Approx(100));
  CHECK(s.op[static_cast<int>(S3Op::kGet)].ttfb.count() == 300);
  CHECK(!s.judged);
  CHECK(s.pass());
}

TEST_CASE("s3 bench: the verdict judges bandwidth, ops/s and TTFB p99, not a put's", "[bench]") {
  S3BenchOptions o;
  auto r = Rank(0, 0, std::vector<uint64_t>(10, 10));  // 100 ops/s, 100 kB/s, TTFB 2 ms
  o.min_iops = 100;
  o.min_bw = 100000;
  o.max_ttfb_p99 = 0.0021;  // within the histogram's 0.78 %
  auto s = ds::bench::SummarizeS3(o, {r});
  CHECK(s.judged);
  CHECK(s.pass());
  o.max_ttfb_p99 = 0.0019;
  CHECK(!ds::bench::SummarizeS3(o, {r}).ttfb_pass);
  o.max_ttfb_p99 = 0;
  o.min_bw = 100001;
  s = ds::bench::SummarizeS3(o, {r});
  CHECK(!s.bw_pass);
  CHECK(s.iops_pass);
  CHECK(!s.pass());
  // A slow put's TTFB (curl's: the upload's start) is not judged.
  r.op[static_cast<int>(S3Op::kPut)].ttfb.Add(9 * kSec);
  o.min_bw = 0;
  o.max_ttfb_p99 = 0.01;
  CHECK(ds::bench::SummarizeS3(o, {r}).ttfb_pass);
}

TEST_CASE("s3 bench: a rank's result survives the wire; garbage is named", "[bench]") {
  auto r = Rank(3, 5 * kSec, {1, 2, 3});
  r.first_error = "s3://b/k: not found";
  r.retries = 4;
  auto back = ds::bench::DecodeS3Result(ds::bench::EncodeS3Result(r));
  REQUIRE(back.ok());
  CHECK(back->rank == 3);
  CHECK(back->tick_ops == r.tick_ops);
  CHECK(back->start_ns == r.start_ns);
  CHECK(back->first_error == r.first_error);
  CHECK(back->retries == 4);
  CHECK(back->op[0].ttfb.Percentile(50) == r.op[0].ttfb.Percentile(50));
  auto bad = ds::bench::DecodeS3Result("{\"rank\": 1}");
  REQUIRE(!bad.ok());
  CHECK(bad.status().code() == ds::Code::kCorruption);
}

TEST_CASE("s3 bench: options are checked, naming the flag", "[bench]") {
  auto check = [](auto edit) {
    S3BenchOptions o;
    o.url = "s3://bucket/p";
    edit(o);
    return ds::bench::CheckS3Bench(&o);
  };
  CHECK(check([](S3BenchOptions&) {}).ok());
  CHECK(check([](S3BenchOptions& o) { o.op = "copy"; }).message().find("`op` copy") == 0);
  CHECK(check([](S3BenchOptions& o) { o.url = "/tmp/x"; }).message().find("s3://BUCKET") !=
        std::string::npos);
  CHECK(check([](S3BenchOptions& o) { o.segment = 0.25; }).message().find("`segment`") == 0);
  CHECK(check([](S3BenchOptions& o) { o.concurrency = 0; }).message().find("`concurrency`") == 0);
  CHECK(check([](S3BenchOptions& o) {
          o.op = "delete";
          o.objects = 10;
          o.ops = 11;
        })
            .message()
            .find("`ops` 11") == 0);
  S3BenchOptions o;
  o.url = "s3://b";
  o.obj_size = 64 << 20;
  REQUIRE(ds::bench::CheckS3Bench(&o).ok());
  CHECK(o.objects == 16);  // 1 GiB at most, 16 at least
}
