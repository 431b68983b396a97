// dsbench replay across ranks (bench/replay/replay.h RankEpochOrder, bench/replay/replay_ranks.h): every
// sample is read exactly once per epoch across the ranks of a job, in map mode (the epoch's
// permutation split DistributedSampler-style) and stream mode (shard i to rank i % world),
// for an odd world and for more ranks than shards; rank results survive the wire and the
// aggregate names the straggler and why.
#include "bench/replay/replay_ranks.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <vector>

#include "bench/replay/replay.h"

using namespace ds;
using namespace ds::bench;

namespace {

// Every sample of [0, n) exactly once across ranks 0..world-1; returns rank 0's order.
std::vector<uint64_t> CheckExactlyOnce(ReplayOptions o, uint64_t size, uint64_t n, int epoch,
                                       const std::vector<ShardRange>& shards) {
  std::vector<int> seen(size, 0);
  std::vector<uint64_t> first;
  for (uint32_t r = 0; r < o.world; r++) {
    o.rank = r;
    auto mine = RankEpochOrder(o, size, n, epoch, shards);
    if (r == 0) first = mine;
    for (uint64_t i : mine) {
      REQUIRE(i < size);
      seen[i]++;
    }
  }
  uint64_t once = 0;
  for (uint64_t i = 0; i < size; i++) {
    INFO("sample " << i);
    CHECK(seen[i] <= 1);
    once += seen[i] == 1;
  }
  CHECK(once == n);
  return first;
}

std::vector<ShardRange> Shards(const std::vector<uint64_t>& samples_per_shard) {
  std::vector<ShardRange> v;
  uint64_t first = 0;
  for (size_t i = 0; i < samples_per_shard.size(); i++) {
    v.push_back(
        {"shard-" + std::to_string(i), samples_per_shard[i] * 1000, first, samples_per_shard[i]});
    first += samples_per_shard[i];
  }
  return v;
}

}  // namespace

TEST_CASE("replay ranks read every sample exactly once per epoch", "[bench]") {
  ReplayOptions o;
  o.seed = 5;
  auto shards = Shards({40, 40, 40, 40, 17});  // 177 samples in 5 shards
  for (uint32_t world : {1u, 2u, 3u, 7u}) {    // 7: more ranks than shards (some idle in stream)
    o.world = world;
    INFO("world " << world);
    o.mode = ds::bench::ReplayMode::kMap;
    auto e1 = CheckExactlyOnce(o, 177, 177, 1, shards);
    auto e2 = CheckExactlyOnce(o, 177, 177, 2, shards);
    if (world > 1) CHECK(e1 != e2);            // a fresh permutation each epoch
    CheckExactlyOnce(o, 177, 100, 1, shards);  // max_samples: the first 100 of the order
    o.mode = ds::bench::ReplayMode::kStream;
    auto s = CheckExactlyOnce(o, 177, 177, 1, shards);
    // rank 0 streams its shards (0, world, 2*world...) front to back
    REQUIRE(!s.empty());
    CHECK(std::is_sorted(s.begin(), s.end()));
    CHECK(s.front() == 0);
    CheckExactlyOnce(o, 177, 177, 1, {});  // no shards (a tree): split in storage order
  }
  // The permutation is the same on every rank: rank 0 of 2 reads positions 0, 2, 4... of world 1.
  o.mode = ds::bench::ReplayMode::kMap;
  o.world = 1;
  o.rank = 0;
  auto all = RankEpochOrder(o, 177, 177, 1, shards);
  o.world = 2;
  auto half = RankEpochOrder(o, 177, 177, 1, shards);
  REQUIRE(half.size() == 89);
  for (size_t k = 0; k < half.size(); k++) CHECK(half[k] == all[2 * k]);
}

TEST_CASE("replay ranks aggregate: sums, the straggler and why", "[bench]") {
  std::vector<RankReplay> ranks;
  for (int r = 0; r < 3; r++) {
    RankReplay x;
    x.rank = r;
    x.host = "n" + std::to_string(r);
    x.required_samples_per_sec = 100;
    RankEpoch e;
    e.epoch = 1;
    e.samples = 100;
    e.bytes = r == 2 ? 3000 : 1000;  // rank 2 got three times the bytes
    e.seconds = r == 2 ? 3.0 : 1.0;
    e.feeds = r != 2;
    for (int i = 0; i < 100; i++) e.sample_lat.Add(r == 2 ? 1100 : 1000);
    e.wait_lat.Add(5000);
    x.epochs.push_back(e);
    auto d = DecodeRankReplay(EncodeRankReplay(x));  // as rank 0 receives it
    REQUIRE(d.ok());
    CHECK(d->epochs[0].sample_lat.mean() == e.sample_lat.mean());
    ranks.push_back(*d);
  }
  ClusterReplay c = AggregateReplay(ranks);
  REQUIRE(c.epochs.size() == 1);
  const ClusterEpoch& e = c.epochs[0];
  CHECK(e.samples == 300);
  CHECK(e.bytes == 5000);
  CHECK(e.seconds == 3.0);
  CHECK(e.samples_per_sec == Approx(100));
  CHECK(e.required_samples_per_sec == Approx(300));
  CHECK_FALSE(e.feeds);
  CHECK(c.starves());
  CHECK(c.ranks[e.straggler].rank == 2);
  CHECK(e.reason == "more bytes");
  CHECK(e.bytes_ratio == Approx(3.0));

  // The same straggler with the same bytes but slow reads.
  for (auto& r : ranks) r.epochs[0].bytes = 1000;
  ranks[2].epochs[0].sample_lat = LatencyHistogram();
  for (int i = 0; i < 100; i++) ranks[2].epochs[0].sample_lat.Add(5000);
  ClusterReplay slow = AggregateReplay(ranks);
  CHECK(slow.epochs[0].reason == "slower reads");
  CHECK(slow.epochs[0].latency_ratio == Approx(5.0));
  ReplayOptions o;
  nlohmann::json j = ClusterReplayJson(o, slow);
  CHECK(j["epochs"][0]["straggler"]["rank"] == 2);
  CHECK(j["epochs"][0]["aggregate"]["samples"] == 300);
  CHECK(ClusterReplayText(o, slow).find("straggler: rank 2 (n2)") != std::string::npos);
  CHECK_FALSE(DecodeRankReplay("{}").ok());
}

TEST_CASE("the job's replay as one result: sums, the slowest rank's time, AU and capacity",
          "[bench]") {
  std::vector<RankReplay> ranks;
  for (int r = 0; r < 3; r++) {
    RankReplay x;
    x.rank = r;
    x.required_samples_per_sec = 100;
    RankEpoch e;
    e.epoch = 1;
    e.samples = 100;
    e.bytes = 1000;
    e.opens = 10 + r;
    e.seconds = r == 1 ? 2.0 : 1.0;
    e.first_batch_seconds = 0.1 * (r + 1);
    e.au = r == 1 ? 0.8 : 0.95;
    e.capacity_samples_per_sec = r == 1 ? 90 : 200;  // rank 1 cannot keep up
    e.residency_before = r == 0 ? 0.3 : 0.0;
    for (int i = 0; i < 10; i++) e.sample_lat.Add(1000 * (r + 1));
    x.epochs.push_back(e);
    auto d = DecodeRankReplay(EncodeRankReplay(x));
    REQUIRE(d.ok());
    CHECK(d->epochs[0].opens == e.opens);
    CHECK(d->epochs[0].capacity_samples_per_sec == e.capacity_samples_per_sec);
    CHECK(d->epochs[0].first_batch_seconds == e.first_batch_seconds);
    ranks.push_back(*d);
  }
  ReplayResult rank0;
  rank0.kind = "native";
  rank0.required_samples_per_sec = 100;
  ReplayResult r = ClusterReplayResult(rank0, AggregateReplay(ranks));
  REQUIRE(r.epochs.size() == 1);
  const EpochResult& e = r.epochs[0];
  CHECK(r.kind == "native");
  CHECK(r.required_samples_per_sec == Approx(300));
  CHECK(e.samples == 300);
  CHECK(e.bytes == 3000);
  CHECK(e.opens == 33);
  CHECK(e.seconds == 2.0);
  CHECK(e.first_batch_seconds == Approx(0.3));
  CHECK(e.au == Approx(0.8));
  CHECK(e.capacity_samples_per_sec == Approx(270));  // the slowest rank's x 3
  CHECK(e.residency_before == Approx(0.1));
  CHECK(e.sample_lat.count() == 30);
  // Feeds only when every rank does: rank 1 does not (capacity 90 < 100, AU 0.8 < 0.9).
  CHECK_FALSE(Feeds(r, e));
  r.compute_time = 0.01;
  CHECK_FALSE(Feeds(r, e));
  ranks[1].epochs[0].capacity_samples_per_sec = 150;
  ranks[1].epochs[0].au = 0.91;
  ReplayResult fed = ClusterReplayResult(rank0, AggregateReplay(ranks));
  CHECK(Feeds(fed, fed.epochs[0]));
  fed.compute_time = 0.01;
  CHECK(Feeds(fed, fed.epochs[0]));
}
