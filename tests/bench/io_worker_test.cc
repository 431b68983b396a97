// One clone of a `dsbench io` job under a virtual clock (bench/io/io_worker.h): its pacing and
// timing options (rate, rate_iops, ramp_time, thinktime, runtime) give figures that follow from
// the options alone, whatever the machine is doing. The reads are real (psync on a real file).
#include "bench/io/io_worker.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "test_util.h"

using namespace ds;
using namespace ds::bench;

namespace {

constexpr int64_t kSecond = 1'000'000'000;

// Time moves by `tick` at each reading, and to the deadline when the clone sleeps.
class VirtualClock final : public IoClock {
 public:
  explicit VirtualClock(int64_t tick) : tick_(tick) {}
  int64_t Now() const override { return now_ += tick_; }
  bool SleepUntil(int64_t until, const std::atomic<bool>& stop) const override {
    if (stop.load()) return false;
    if (until > now_) {
      slept_ += until - now_;
      now_ = until;
    }
    return true;
  }
  int64_t slept() const { return slept_; }

 private:
  int64_t tick_;
  mutable int64_t now_ = 1000 * kSecond;
  mutable int64_t slept_ = 0;
};

IoJobOptions WorkerJob(const std::string& file) {
  IoJobOptions o;
  o.name = "unit";
  o.path = file;
  o.rw = RwMode::kRead;
  o.bs = 4096;
  o.size = 1 << 20;
  o.iodepth = 1;
  o.time_based = true;
  o.runtime = 2;
  o.invalidate = false;
  return o;
}

JobResult WorkerRun(const IoJobOptions& o, const VirtualClock& clock) {
  std::atomic<bool> stop{false};
  JobResult r;
  std::vector<std::string> files = {o.path};
  Status s = RunClone(o, files, 0, stop, nullptr, &r, clock);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return r;
}

}  // namespace

TEST_CASE("io clone: rate caps the bytes a run moves", "[bench]") {
  test::TempDir dir;
  test::WriteFile(dir / "f", std::string(1 << 20, 'x'));
  IoJobOptions o = WorkerJob(dir / "f");
  o.rate = 1 << 20;  // 1 MiB/s for 2 s: 2 MiB, 512 reads of 4 KiB
  VirtualClock clock(1000);
  JobResult r = WorkerRun(o, clock);
  CHECK(r.read.io_bytes >= (2u << 20) - 4096);
  CHECK(r.read.io_bytes <= (2u << 20) + 4096);
  CHECK(r.runtime_ms == Approx(2000).epsilon(0.01));
  CHECK(clock.slept() > kSecond);  // it waited for most of the 2 s
}

TEST_CASE("io clone: rate_iops caps the IOs", "[bench]") {
  test::TempDir dir;
  test::WriteFile(dir / "f", std::string(1 << 20, 'x'));
  IoJobOptions o = WorkerJob(dir / "f");
  o.rate_iops = 100;  // 100 IOPS for 2 s
  VirtualClock clock(1000);
  JobResult r = WorkerRun(o, clock);
  CHECK(r.read.ios >= 199);
  CHECK(r.read.ios <= 201);
}

TEST_CASE("io clone: ramp_time is not counted, and the runtime starts after it", "[bench]") {
  test::TempDir dir;
  test::WriteFile(dir / "f", std::string(1 << 20, 'x'));
  IoJobOptions o = WorkerJob(dir / "f");
  o.rate_iops = 100;
  o.ramp_time = 1;  // 1 s of ramp (about 100 IOs) then 2 s counted (about 200)
  VirtualClock clock(1000);
  JobResult r = WorkerRun(o, clock);
  CHECK(r.read.ios >= 199);
  CHECK(r.read.ios <= 201);
  CHECK(r.runtime_ms == Approx(2000).epsilon(0.01));
  CHECK(r.elapsed == Approx(3).epsilon(0.01));
}

TEST_CASE("io clone: thinktime waits after each completion", "[bench]") {
  test::TempDir dir;
  test::WriteFile(dir / "f", std::string(1 << 20, 'x'));
  IoJobOptions o = WorkerJob(dir / "f");
  o.thinktime = 0.01;  // 10 ms after each IO for 2 s: about 200 IOs
  VirtualClock clock(1000);
  JobResult r = WorkerRun(o, clock);
  CHECK(r.read.ios >= 195);
  CHECK(r.read.ios <= 201);
  CHECK(clock.slept() >= 195 * kSecond / 100);
}

TEST_CASE("io clone: without pacing, the size bounds a run that is not time based", "[bench]") {
  test::TempDir dir;
  test::WriteFile(dir / "f", std::string(1 << 20, 'x'));
  IoJobOptions o = WorkerJob(dir / "f");
  o.time_based = false;
  o.runtime = 0;
  VirtualClock clock(1000);
  JobResult r = WorkerRun(o, clock);
  CHECK(r.read.io_bytes == (1u << 20));
  CHECK(r.read.ios == 256);
  CHECK(clock.slept() == 0);
}
