// Which shards belong to rank r of w: the one function every reader that splits a dataset across
// ranks calls (dssync --rank/--world; next, the Python StreamDataset and dsbench replay under
// MPI), so that they always agree (docs/formats/README.md#shard-assignment).
//
//   kRoundRobin     shard i goes to rank i % world (dssync's documented default)
//   kBalancedBytes  shards in decreasing size, each to the rank holding the fewest bytes so far
//                   (ties: the larger shard index first, the lower rank first): the
//                   longest-processing-time rule; ranks whose shards differ in bytes straggle
// Both are deterministic functions of the shard sizes, rank and world; each rank's shards come
// back in increasing shard order. Thread-safety: pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ds {

enum class ShardPolicy { kRoundRobin, kBalancedBytes };

// REQUIRES: rank < world.
std::vector<size_t> AssignShards(std::span<const uint64_t> shard_bytes, uint32_t rank,
                                 uint32_t world, ShardPolicy policy = ShardPolicy::kRoundRobin);

}  // namespace ds
