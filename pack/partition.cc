#include "pack/partition.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <thread>

#include "formats/sources/source.h"
#include "src/endian.h"
#include "src/human.h"

namespace ds {

std::vector<uint64_t> AssignShardRanges(const std::vector<uint64_t>& shard_bytes, int n) {
  unsigned __int128 total = 0;  // 128-bit: the sums below cannot overflow
  for (uint64_t b : shard_bytes) total += b;
  std::vector<uint64_t> first(n + 1, shard_bytes.size());
  first[0] = 0;
  // first[r]: the first shard with r/n of the total bytes before it.
  unsigned __int128 before = 0;
  size_t k = 0;
  for (int r = 1; r < n; r++) {
    unsigned __int128 goal = total * static_cast<unsigned>(r);
    while (k < shard_bytes.size() && before * n < goal) before += shard_bytes[k++];
    first[r] = k;
  }
  return first;
}

namespace {

// Stats files [ranges[0]) then [ranges[1]) of source's tree into out (one entry per file, in
// that order), with up to `threads` threads; the first failure.
Status StatRanges(const SampleSource& source, std::array<std::pair<uint64_t, uint64_t>, 2> ranges,
                  int threads, std::vector<FileVersion>* out) {
  uint64_t first = ranges[0].second - ranges[0].first;
  out->assign(first + ranges[1].second - ranges[1].first, {});
  std::atomic<uint64_t> next{0};
  std::mutex mu;
  Status failed;
  auto work = [&] {
    for (uint64_t i; (i = next.fetch_add(1)) < out->size();) {
      uint64_t f = i < first ? ranges[0].first + i : ranges[1].first + (i - first);
      auto v = source.StatFile(f);
      if (!v.ok()) {
        std::lock_guard lock(mu);
        if (failed.ok()) failed = v.status();
        next = out->size();
        return;
      }
      (*out)[i] = *v;
    }
  };
  std::vector<std::thread> pool;
  int t = static_cast<int>(std::clamp<uint64_t>(out->size(), 1, std::max(1, threads)));
  for (int i = 1; i < t; i++) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
  return failed;
}

std::string Modified(int64_t ns) {
  return fmt::format("{}.{:09}", ns / 1000000000, ns % 1000000000);
}

}  // namespace

Result<std::vector<uint64_t>> SizeFiles(Job& job, const SampleSource& source, int threads) {
  const FileTree& tree = source.tree();
  uint64_t count = tree.file_count();
  uint64_t n = static_cast<uint64_t>(job.size()), r = static_cast<uint64_t>(job.rank());
  auto share = [&](uint64_t k) { return std::pair{count * k / n, count * (k + 1) / n}; };
  // This rank's share, for the plan, and the next rank's, to check that both see one version.
  uint64_t checked = (r + 1) % n;
  auto mine = share(r);
  auto check = n > 1 ? share(checked) : std::pair<uint64_t, uint64_t>{0, 0};
  std::vector<FileVersion> stats;
  DS_RETURN_IF_ERROR(
      job.Agree(StatRanges(source, {mine, check}, threads, &stats), "the sizes of SRC's files"));
  std::string bytes;
  bytes.reserve((mine.second - mine.first) * 16);
  for (uint64_t i = 0; i < mine.second - mine.first; i++) {
    PutLE64(&bytes, stats[i].size);
    PutLE64(&bytes, static_cast<uint64_t>(stats[i].mtime_ns));
  }
  DS_ASSIGN_OR_RETURN(auto all, job.AllGather(bytes, "the sizes of SRC's files"));
  std::vector<FileVersion> versions;
  versions.reserve(count);
  for (const auto& part : all) {
    for (size_t at = 0; at + 16 <= part.size(); at += 16) {
      versions.push_back(
          {LoadLE64(part.data() + at), static_cast<int64_t>(LoadLE64(part.data() + at + 8))});
    }
  }
  if (versions.size() != count) {
    return Status(Code::kInternal,
                  fmt::format("sizes of {} files gathered for {} listed", versions.size(), count));
  }
  // Same names are not the same files: a stale NFS client cache, or a copy per node that
  // differs, would mix two versions of SRC in one output.
  Status differ;
  for (uint64_t f = check.first; f < check.second && differ.ok(); f++) {
    const FileVersion& here = stats[mine.second - mine.first + (f - check.first)];
    const FileVersion& there = versions[f];
    if (here == there) continue;
    differ =
        Status(Code::kBadInput,
               fmt::format("{}/{}: {} bytes, modified {}, here; rank {} sees {} bytes, "
                           "modified {}: every rank must see the same SRC (a stale NFS "
                           "cache, or a different copy per node?); re-run once it does",
                           tree.root(), EscapeBytes(tree.path(f)), here.size,
                           Modified(here.mtime_ns), checked, there.size, Modified(there.mtime_ns)));
  }
  DS_RETURN_IF_ERROR(job.Agree(differ, "comparing the ranks' versions of SRC"));
  std::vector<uint64_t> sizes;
  sizes.reserve(count);
  for (const auto& v : versions) sizes.push_back(v.size);
  return sizes;
}

}  // namespace ds
