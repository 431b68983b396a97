#include "src/system_probe.h"

#include <catch2/catch.hpp>

using namespace ds;

TEST_CASE("mountinfo lines are parsed, escapes decoded", "[core]") {
  std::string text =
      "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,errors=remount-ro\n"
      "40 22 0:35 / /mnt/my\\040data rw,nosuid - nfs4 server:/export rw,vers=4.2,rsize=1048576,"
      "wsize=1048576,actimeo=3\n"
      "garbage line\n";
  auto m = ParseMountInfo(text);
  REQUIRE(m.size() == 2);
  CHECK(m[0].mount_point == "/");
  CHECK(m[0].fstype == "ext4");
  CHECK(m[0].major == 254);
  CHECK(m[1].mount_point == "/mnt/my data");
  CHECK(m[1].fstype == "nfs4");
  CHECK(m[1].source == "server:/export");
  CHECK(m[1].options.find("rsize=1048576") != std::string::npos);
  CHECK(m[1].options.find("nosuid") != std::string::npos);
}

TEST_CASE("statfs magics have names", "[core]") {
  CHECK(FsTypeName(0xEF53) == "ext4");
  CHECK(FsTypeName(0x6969) == "nfs");
  CHECK(FsTypeName(0x0BD00BD0) == "lustre");
  CHECK(FsTypeName(0x65735546) == "fuse");
  CHECK(FsTypeName(0x1234) == "0x1234");
}

TEST_CASE("probing this machine fills the basics", "[core]") {
  SystemProbe p = ProbeSystem("/tmp");
  CHECK(p.cores > 0);
  CHECK(p.mem_total > 0);
  CHECK(p.mem_available > 0);
  CHECK_FALSE(p.fs_type.empty());
  CHECK_FALSE(p.mount_point.empty());
  auto j = p.ToJson();
  CHECK(j["memory"]["total"].get<uint64_t>() == p.mem_total);
  CHECK(p.ToText().find("cores") != std::string::npos);
  SystemProbe missing = ProbeSystem("/no/such/path");
  CHECK_FALSE(missing.notes.empty());
}

TEST_CASE("a URL is probed as remote: its scheme, no mount, the host's memory", "[core]") {
  SystemProbe p = ProbeSystem("nfs://filer/export/ds");
  CHECK(p.remote);
  CHECK(p.fs_type == "nfs");
  CHECK(p.mount_point.empty());
  CHECK(p.block_device.empty());
  CHECK(p.notes.empty());
  CHECK(p.mem_total > 0);
  CHECK(p.ToText().find("path nfs://filer/export/ds: nfs, reached without a local mount") !=
        std::string::npos);
  CHECK(p.ToJson()["remote"] == true);
  CHECK_FALSE(ProbeSystem(".").remote);
}
