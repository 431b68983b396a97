// fio's verify for dsbench io (bench/io/io_verify.h): every block a job writes reads back as
// written, and each kind of damage is found and named (a flipped payload byte, a block written
// to the wrong offset, a block never written); and the ETA/status text (bench/io/io_live.h).
#include "bench/io/io_verify.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "bench/io/io_live.h"
#include "src/fd.h"
#include "test_util.h"

namespace ds::bench {
namespace {

constexpr uint64_t kVerifyBs = 4096;

// A file of `blocks` verifiable blocks, all marked written.
struct Written {
  test::TempDir dir;
  std::string path = dir / "f";
  WrittenBlocks marks;
  Written(VerifyKind kind, uint64_t blocks) : marks(blocks * kVerifyBs, kVerifyBs) {
    std::string data(blocks * kVerifyBs, '\0');
    for (uint64_t b = 0; b < blocks; b++) {
      FillVerifiable(kind, 7, b * kVerifyBs, data.data() + b * kVerifyBs, kVerifyBs);
      marks.Mark(b * kVerifyBs);
    }
    test::WriteFile(path, data);
  }
  Status Check(VerifyKind kind, VerifyResult* r) {
    auto fd = OpenFile(path, O_RDONLY);
    REQUIRE(fd.ok());
    std::vector<char> buf(kVerifyBs);
    return VerifyWritten(kind, fd->get(), 0, marks, buf.data(), path, r);
  }
  void Poke(uint64_t at, const std::string& bytes) {
    auto fd = OpenFile(path, O_WRONLY);
    REQUIRE(fd.ok());
    REQUIRE(WriteFullAt(fd->get(), bytes.data(), bytes.size(), at, path).ok());
  }
};

TEST_CASE("verify: what was written reads back; damage is found and named", "[bench]") {
  for (VerifyKind kind : {VerifyKind::kCrc32c, VerifyKind::kMd5}) {
    INFO(VerifyName(kind));
    Written w(kind, 16);
    VerifyResult r;
    REQUIRE(w.Check(kind, &r).ok());
    CHECK(r.blocks == 16);
    CHECK(r.bad == 0);

    w.Poke(5 * kVerifyBs + 1000, "X");  // a payload byte
    VerifyResult r1;
    Status s = w.Check(kind, &r1);
    CHECK(s.code() == Code::kCorruption);
    CHECK_THAT(s.message(), Catch::Contains(w.path) && Catch::Contains("offset 20480") &&
                                Catch::Contains("checksum"));
    CHECK(r1.bad == 1);

    // Block 9's bytes copied over block 3: a misdirected write.
    std::string nine = test::ReadFile(w.path).substr(9 * kVerifyBs, kVerifyBs);
    w.Poke(3 * kVerifyBs, nine);
    VerifyResult r2;
    s = w.Check(kind, &r2);
    CHECK(r2.bad == 2);
    CHECK_THAT(s.message(), Catch::Contains("offset 12288") &&
                                Catch::Contains("says offset 36864: a misdirected write") &&
                                Catch::Contains("and 1 more of the 16 blocks"));
    w.Poke(0, std::string(kVerifyBs, '\0'));  // never written
    VerifyResult r3;
    s = w.Check(kind, &r3);
    CHECK_THAT(s.message(), Catch::Contains("offset 0") && Catch::Contains("bad magic"));
  }
  CHECK(ParseVerify("crc32c-intel").value() == VerifyKind::kCrc32c);
  CHECK(!ParseVerify("sha256").ok());
}

TEST_CASE("verify: only the marked blocks are read back", "[bench]") {
  Written w(VerifyKind::kCrc32c, 4);
  WrittenBlocks some(4 * kVerifyBs, kVerifyBs);
  some.Mark(kVerifyBs);
  some.Mark(3 * kVerifyBs);
  w.Poke(0, std::string(kVerifyBs, '\0'));  // an unmarked block's damage is not this job's
  w.marks = some;
  VerifyResult r;
  REQUIRE(w.Check(VerifyKind::kCrc32c, &r).ok());
  CHECK(r.blocks == 2);
}

TEST_CASE("live: the ETA line and the status report", "[bench]") {
  IoJobOptions o;
  o.name = "seq";
  std::vector<IoJobOptions> specs{o};
  std::vector<LiveJob> jobs{{0, 0, 50 << 20, 100, 100 << 20, 0},
                            {0, 1, 25 << 20, 50, 100 << 20, 0}};
  // 2 jobs, the further one half done; 100 MB/s over the last second; the slower job's 75 MiB
  // left at half the rate each.
  std::string eta = EtaLine(jobs, 2.0, 100'000'000, 150, 1.0);
  CHECK(eta == "Jobs: 2: [50.0%][100.0 MB/s][150 IOPS][eta 00m:02s]");
  std::vector<LiveJob> timed{{0, 0, 1, 1, 0, 30}};
  CHECK_THAT(EtaLine(timed, 12.0, 0, 0, 1.0),
             Catch::Contains("[40.0%]") && Catch::Contains("[eta 00m:18s]"));
  std::vector<LiveJob> before{{0, 0, 0, 0, 0, 0}, {0, 1, 0, 0, 0, 0}};
  std::string st = StatusReport(jobs, before, specs, 5.0, 5.0);
  CHECK_THAT(st, Catch::StartsWith("status at 5.0s:\n  seq.0: 50.0 MiB (100 IOs) so far; ") &&
                     Catch::Contains("  seq.1: 25.0 MiB (50 IOs)") &&
                     Catch::Contains("over the last 5.0s"));
}

}  // namespace
}  // namespace ds::bench
