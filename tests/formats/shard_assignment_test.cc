// ds::AssignShards: the one "which shards belong to rank r of w" (formats/shard_assignment.h),
// called by dssync --rank/--world (and, next, the Python StreamDataset and dsbench under MPI).
#include "formats/shard_assignment.h"

#include <catch2/catch.hpp>
#include <numeric>

#include "src/random.h"

using ds::AssignShards;
using ds::ShardPolicy;

namespace {
std::vector<uint64_t> Sizes(size_t n, uint64_t each = 1) { return std::vector<uint64_t>(n, each); }
}  // namespace

TEST_CASE("round robin: shard i goes to rank i % world, every shard exactly once", "[formats]") {
  CHECK(AssignShards(Sizes(10), 0, 3) == std::vector<size_t>{0, 3, 6, 9});
  CHECK(AssignShards(Sizes(10), 1, 3) == std::vector<size_t>{1, 4, 7});
  CHECK(AssignShards(Sizes(10), 2, 3) == std::vector<size_t>{2, 5, 8});
  CHECK(AssignShards(Sizes(2), 3, 4).empty());
  CHECK(AssignShards(Sizes(5), 0, 1).size() == 5);
  std::vector<int> seen(97, 0);
  for (uint32_t r = 0; r < 8; ++r) {
    for (size_t i : AssignShards(Sizes(97), r, 8)) ++seen[i];
  }
  for (int s : seen) CHECK(s == 1);
}

TEST_CASE("balanced by bytes: every shard once, ranks within one shard of each other",
          "[formats]") {
  ds::Rng rng(7);
  std::vector<uint64_t> sizes(203);
  for (auto& s : sizes) s = 1000 + rng.Below(1u << 20);
  const uint32_t world = 6;
  std::vector<int> seen(sizes.size(), 0);
  std::vector<uint64_t> bytes(world, 0);
  for (uint32_t r = 0; r < world; ++r) {
    auto mine = AssignShards(sizes, r, world, ShardPolicy::kBalancedBytes);
    CHECK(std::is_sorted(mine.begin(), mine.end()));
    for (size_t i : mine) {
      ++seen[i];
      bytes[r] += sizes[i];
    }
  }
  for (int s : seen) CHECK(s == 1);
  uint64_t largest = *std::max_element(sizes.begin(), sizes.end());
  auto [lo, hi] = std::minmax_element(bytes.begin(), bytes.end());
  CHECK(*hi - *lo <= largest);  // the greedy rule's bound
  // Round robin over the same sizes is no better balanced.
  std::vector<uint64_t> rr(world, 0);
  for (uint32_t r = 0; r < world; ++r) {
    for (size_t i : AssignShards(sizes, r, world)) rr[r] += sizes[i];
  }
  auto [rlo, rhi] = std::minmax_element(rr.begin(), rr.end());
  CHECK(*hi - *lo <= *rhi - *rlo);
}

TEST_CASE("balanced: one huge shard gets a rank of its own", "[formats]") {
  std::vector<uint64_t> sizes{10, 10, 1000, 10, 10, 10};
  CHECK(AssignShards(sizes, 0, 2, ShardPolicy::kBalancedBytes) == std::vector<size_t>{2});
  CHECK(AssignShards(sizes, 1, 2, ShardPolicy::kBalancedBytes) ==
        std::vector<size_t>{0, 1, 3, 4, 5});
}
