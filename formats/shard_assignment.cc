#include "formats/shard_assignment.h"

#include <algorithm>
#include <numeric>

namespace ds {

std::vector<size_t> AssignShards(std::span<const uint64_t> shard_bytes, uint32_t rank,
                                 uint32_t world, ShardPolicy policy) {
  std::vector<size_t> out;
  const size_t n = shard_bytes.size();
  if (policy == ShardPolicy::kRoundRobin) {
    for (size_t i = rank; i < n; i += world) out.push_back(i);
    return out;
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return shard_bytes[a] != shard_bytes[b] ? shard_bytes[a] > shard_bytes[b] : a > b;
  });
  std::vector<uint64_t> load(world, 0);
  for (size_t i : order) {
    auto least = std::min_element(load.begin(), load.end());  // first (lowest rank) on ties
    load[least - load.begin()] += shard_bytes[i];
    if (static_cast<uint32_t>(least - load.begin()) == rank) out.push_back(i);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ds
