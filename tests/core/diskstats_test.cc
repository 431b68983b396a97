#include "src/diskstats.h"

#include <unistd.h>

#include <catch2/catch.hpp>

#include "test_util.h"

using namespace ds;

namespace {
// Two samples of a 5.x+ kernel's /proc/diskstats (17 counters: discard and flush fields) with a
// pre-4.18 line (11 counters) and a malformed one mixed in.
const char* kBefore =
    "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
    " 254       0 vda 14877060 918314 990351962 6609774 1309591 1600251 1317085920 6381730 0 "
    "1232532 13195383 711399 52 1272702128 199576 84469 4301\n"
    " 254       1 vda1 100 0 800 50 10 0 80 5 0 60 55\n"
    "garbage\n";
const char* kAfter =
    " 254       0 vda 14887060 918414 990431962 6614774 1310591 1600351 1317101920 6383730 2 "
    "1233032 13202383 711399 52 1272702128 199576 84469 4301\n";
}  // namespace

TEST_CASE("diskstats lines are parsed, old and new kernels alike", "[core]") {
  auto all = ParseDiskStats(kBefore);
  REQUIRE(all.size() == 3);
  const DiskStat& vda = all[1];
  CHECK(vda.major == 254);
  CHECK(vda.minor == 0);
  CHECK(vda.name == "vda");
  CHECK(vda.reads == 14877060);
  CHECK(vda.read_merges == 918314);
  CHECK(vda.read_sectors == 990351962);
  CHECK(vda.read_ms == 6609774);
  CHECK(vda.writes == 1309591);
  CHECK(vda.write_sectors == 1317085920);
  CHECK(vda.write_ms == 6381730);
  CHECK(vda.in_flight == 0);
  CHECK(vda.io_ms == 1232532);
  CHECK(vda.weighted_io_ms == 13195383);
  CHECK(all[2].name == "vda1");
  CHECK(all[2].weighted_io_ms == 55);
}

TEST_CASE("a delta gives fio's util and iostat's await", "[core]") {
  DiskStat a = ParseDiskStats(kBefore)[1];
  DiskStat b = ParseDiskStats(kAfter)[0];
  DiskUtil u = DiskDelta(a, b, 1000);  // one second apart
  CHECK(u.name == "vda");
  CHECK(u.read_ios == 10000);
  CHECK(u.write_ios == 1000);
  CHECK(u.read_merges == 100);
  CHECK(u.read_sectors == 80000);
  CHECK(u.write_sectors == 16000);
  CHECK(u.read_ticks == 5000);
  CHECK(u.write_ticks == 2000);
  CHECK(u.io_ticks == 500);
  CHECK(u.in_queue == 7000);
  CHECK(u.util() == Approx(50.0));
  CHECK(u.reads_per_sec() == Approx(10000));
  CHECK(u.read_bytes_per_sec() == Approx(80000.0 * 512));
  CHECK(u.r_await_ms() == Approx(0.5));
  CHECK(u.w_await_ms() == Approx(2.0));
  auto j = u.ToJson();
  CHECK(j["read_ios"] == 10000);
  CHECK(j["write_ios"] == 1000);
  CHECK(j["read_ticks"] == 5000);
  CHECK(j["in_queue"] == 7000);
  CHECK(j["util"].get<double>() == Approx(50.0));
  CHECK_FALSE(j.contains("peak_util"));  // not sampled
  CHECK(u.ToText().find("disk stats (vda): util=50.0% r/s=10.0k rMB/s=41.0 r_await=0.50ms") == 0);

  // util is capped at 100 (io_ms can run ahead of wall time between two reads), and counters
  // that went backwards (a device reset) count as zero.
  CHECK(DiskDelta(a, b, 100).util() == 100.0);
  CHECK(DiskDelta(b, a, 1000).read_ios == 0);
  CHECK(DiskUtilText(std::nullopt) == "disk stats: n/a (no block device behind PATH)");
}

TEST_CASE("a sampler reads its device from the file it is given", "[core]") {
  test::TempDir dir;
  std::string file = dir / "diskstats";
  test::WriteFile(file, kBefore);
  DiskSampler sampler("vda", std::chrono::milliseconds(5), file);
  ::usleep(30000);  // a few sampling intervals on the unchanged file
  test::WriteFile(file, kAfter);
  auto u = sampler.Stop();
  REQUIRE(u.has_value());
  CHECK(u->read_ios == 10000);
  CHECK(u->peak_util >= 0);
  CHECK(u->msec > 0);

  CHECK_FALSE(DiskSampler("", std::chrono::milliseconds(5), file).Stop().has_value());
  CHECK_FALSE(DiskSampler("sdz", std::chrono::milliseconds(5), file).Stop().has_value());
  CHECK_FALSE(ReadDiskStat("vda", dir / "missing").ok());
}
