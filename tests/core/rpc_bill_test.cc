#include "src/rpc_bill.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

using namespace ds;

namespace {
// tests/fixtures/mountstats.txt: a kernel's /proc/self/mountstats (statvers 1.1, nine counters
// per op) with an NFSv3 mount that read a file tree, an NFSv4.2 mount, an NFS mount that has
// done nothing, and mounts of other file systems (one nested under the NFS mount).
std::string MountstatsFixture() {
  std::ifstream f(std::string(DSPACK_TEST_FIXTURES) + "/mountstats.txt");
  REQUIRE(f);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("mountstats: the NFS mounts and their per-op counters", "[core]") {
  auto mounts = ParseMountstats(MountstatsFixture());
  REQUIRE(mounts.size() == 3);
  REQUIRE(mounts.count("/mnt/datasets"));
  REQUIRE(mounts.count("/mnt/v4"));
  REQUIRE(mounts.count("/mnt/idle"));
  const RpcBill& v3 = mounts["/mnt/datasets"];
  CHECK(v3.source == "kernel");
  // READ: 2048 ops in 2049 transmissions (one retransmit); the others none.
  CHECK(v3.ops.at("READ").retransmits == 1);
  CHECK(v3.ops.at("GETATTR").retransmits == 0);
  CHECK(v3.protocol == "NFSv3");
  // Ops with a zero count are left out; NULL (the mount's ping) is one RPC like any other.
  CHECK(v3.ops.size() == 9);
  CHECK(v3.ops.count("SETATTR") == 0);
  const RpcOpStats& lookup = v3.ops.at("LOOKUP");
  CHECK(lookup.count == 40211);
  CHECK(lookup.bytes_sent == 5467796);
  CHECK(lookup.bytes_received == 8523984);
  CHECK(lookup.rtt_ms_sum == 39881);
  CHECK(lookup.execute_ms_sum == 40697);
  CHECK(lookup.mean_ms() == Approx(40697.0 / 40211));
  CHECK(v3.ops.at("READ").failed == 1);  // one major timeout
  CHECK(v3.total() == 1 + 20117 + 40211 + 20062 + 2048 + 40 + 1 + 2 + 1);
  CHECK(mounts["/mnt/v4"].protocol == "NFSv4");
  CHECK(mounts["/mnt/v4"].ops.at("READ").count == 10);
  CHECK(mounts["/mnt/idle"].ops.empty());
}

TEST_CASE("mountstats: damaged and foreign lines are skipped, not fatal", "[core]") {
  std::string text =
      "device a:/x mounted on /m with fstype nfs statvers=1.1\n"
      "\tper-op statistics\n"
      "\t     GETATTR: 5 5 0 1 2 3 4 5 0\n"
      "\t      LOOKUP: 7 garbage\n"
      "\t      ACCESS: 3 3 0 1 2 3 4 5\n"  // a pre-1.1 kernel: eight counters
      "no device line here\n"
      "device broken\n";
  auto mounts = ParseMountstats(text);
  REQUIRE(mounts.count("/m"));
  CHECK(mounts["/m"].ops.size() == 2);
  CHECK(mounts["/m"].ops.at("ACCESS").count == 3);
  CHECK(ParseMountstats("").empty());
}

TEST_CASE("rpc bill: a phase's delta, its words and its JSON", "[core]") {
  RpcBill before, after;
  before.source = after.source = "libnfs";
  before.protocol = after.protocol = "NFSv3";
  for (int i = 0; i < 10; i++) before.ops["LOOKUP"].latency.Add(1000000);
  before.ops["LOOKUP"].count = 10;
  after = before;
  // The phase: 2000 LOOKUPs at 2 ms, 1000 GETATTRs at 1 ms, 1000 ACCESS, 1 failed READ.
  for (int i = 0; i < 2000; i++) after.ops["LOOKUP"].latency.Add(2000000);
  after.ops["LOOKUP"].count += 2000;
  for (int i = 0; i < 1000; i++) after.ops["GETATTR"].latency.Add(1000000);
  after.ops["GETATTR"].count = 1000;
  after.ops["ACCESS"].count = 1000;
  after.ops["READ"].count = 1;
  after.ops["READ"].failed = 1;
  RpcBill d = RpcBillDelta(after, before);
  REQUIRE(d.ops.at("LOOKUP").count == 2000);
  CHECK(d.ops.at("LOOKUP").latency.count() == 2000);
  CHECK(d.ops.at("LOOKUP").mean_ms() == Approx(2.0).epsilon(0.01));
  CHECK(d.ops.at("LOOKUP").latency.Percentile(50) == Approx(2000000).epsilon(0.01));
  CHECK(d.total() == 4001);
  CHECK(FormatRpcBill(d, 1000) ==
        "2.00 LOOKUP + 1.00 ACCESS + 1.00 GETATTR + 0.001 READ per sample");
  CHECK(FormatRpcBill(RpcBill{}, 1000) == "no RPCs");
  CHECK(FormatRpcBill(d, 0) == "2000 LOOKUP + 1000 ACCESS + 1000 GETATTR + 1 READ RPCs");
  auto j = RpcBillJson(d, 1000, 1ull << 30);
  CHECK(j["total"] == 4001);
  CHECK(j["per_sample"].get<double>() == Approx(4.001));
  CHECK(j["per_gib"].get<double>() == Approx(4001));
  CHECK(j["ops"]["READ"]["failed"] == 1);
  CHECK(j["ops"]["ACCESS"]["lat_ns"].is_null());  // counted, never timed
  CHECK(j["ops"]["GETATTR"]["lat_ns"]["p99"].get<double>() == Approx(1e6).epsilon(0.01));
  CHECK(RpcBillJson(d, 0, 0)["per_sample"].is_null());
}

TEST_CASE("histogram: Subtract undoes Merge", "[core]") {
  LatencyHistogram a, b, ab;
  for (uint64_t v = 1000; v < 200000; v += 997) a.Add(v);
  for (uint64_t v = 500000; v < 900000; v += 1013) b.Add(v);
  ab = a;
  ab.Merge(b);
  LatencyHistogram d = ab;
  REQUIRE(d.Subtract(a));
  CHECK(d.count() == b.count());
  CHECK(d.mean() == Approx(b.mean()));
  CHECK(d.stddev() == Approx(b.stddev()).epsilon(1e-6));
  CHECK(d.Percentile(50) == b.Percentile(50));
  CHECK(d.min() == Approx(b.min()).epsilon(0.01));
  CHECK(d.max() == Approx(b.max()).epsilon(0.01));
  // Not a past copy: refused, unchanged.
  LatencyHistogram c = a;
  CHECK_FALSE(c.Subtract(b));
  CHECK(c.count() == a.count());
  REQUIRE(d.Subtract(d));
  CHECK(d.count() == 0);
}
